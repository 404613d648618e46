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
