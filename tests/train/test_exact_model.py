"""Exact evaluation of a sampling model player: the teacher-forced distribution of its replies,
walked, against 4,000 games it actually samples."""

from pathlib import Path

import pytest

from ttt_lab.config.schema import SuiteEntry
from ttt_lab.evaluation.exact import exact_suite
from ttt_lab.players.distributions import ScoredDistribution
from ttt_lab.stats.rates import wilson
from ttt_lab.train.checkpoints import load_model
from ttt_lab.train.evaluate import evaluate_model

from .conftest import cfg_for


@pytest.mark.slow  # in make test: the scored probabilities (tests/evaluation/test_scored.py) and the walk (env)
@pytest.mark.xdist_group("sft")
def test_a_stochastic_model_policy_evaluated_exactly_agrees_with_4000_sampled_games(
        sft_run: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = sft_run
    cfg = cfg_for(tmp_path, "eval.min_prob=1e-4")
    model, tokenizer = load_model(str(path), cfg)
    entry = SuiteEntry("optimal")
    # A briefly warmed-up model spreads its replies almost evenly; at temperature 0.1 it still samples
    # (several replies keep mass) but the walk can follow most of it.
    policy = ScoredDistribution(model, tokenizer, temperature=0.1, max_new_tokens=cfg.player.max_new_tokens)
    (exact,) = exact_suite(policy, cfg, [entry])
    sampled_cfg = cfg_for(tmp_path, "eval.mode=sampled")
    (sampled,) = evaluate_model(model, tokenizer, sampled_cfg, 4000, temperature=0.1, suite=(entry,))
    assert exact.unexplored < 0.5, exact.unexplored  # the walk followed a good part of the policy's mass
    assert sampled.mode == "sampled" and sampled.games == 4000
    for name, k in (("draw", sampled.draws), ("loss", sampled.losses)):
        _, lo, hi = exact.outcome_rates()[name]
        s_lo, s_hi = wilson(k, sampled.games, z=3.29)  # 99.9 %: two checks, no flakes
        assert s_lo <= hi and lo <= s_hi, (name, k / sampled.games, (lo, hi))  # the sample meets the bounds


@pytest.mark.parametrize("bf16", [False, True])
def test_the_trainings_exact_evaluation_reads_a_kept_tree_or_walks_at_its_precision_and_keeps_it(
        tiny_checkpoint: Path, tmp_path: Path, expansions: list, bf16: bool) -> None:
    """`evaluate_model` under `eval.mode=exact`: a greedy model whose tree is kept (DAgger's last
    walk of the same weights) is not walked again; another is walked once, under bf16 through a
    bf16 copy of its weights (as rollouts are), and kept under its own weights, so a second
    evaluation reads it; the rates are those of the tree walked."""
    import dataclasses

    import torch

    from ttt_lab.evaluation.exact import exact_suite
    from ttt_lab.train.evaluate import greedy_walked
    from ttt_lab.train.runtime import resolve

    cfg = cfg_for(tmp_path, "eval.mode=exact")
    runtime = dataclasses.replace(resolve(cfg), bf16=bf16)
    suite = (SuiteEntry("random", opponent="random"),)
    model, tok = load_model(str(tiny_checkpoint), cfg)

    def walked() -> list:
        return [next(p.player.model.parameters()).dtype for p in expansions]

    first = evaluate_model(model, tok, cfg, 10, suite=suite, runtime=runtime)
    assert walked() == [torch.bfloat16 if bf16 else torch.float32]
    again = evaluate_model(load_model(str(tiny_checkpoint), cfg)[0], tok, cfg, 10, suite=suite, runtime=runtime)
    assert len(walked()) == 1 and first[0].mode == "exact"
    assert [s.points_mean for s in again] == [s.points_mean for s in first]
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # weights that moved get their own walk
    policy = greedy_walked(model, tok, cfg, bf16)
    exact_suite(policy, cfg, [SuiteEntry()])
    assert len(walked()) == 2
