"""Evaluating a policy checkpoint (or a model in memory) with the batched rollout engine."""

from __future__ import annotations

from ttt_lab.config.build import suite_opponent
from ttt_lab.config.schema import Config, SuiteEntry
from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.record import GameRecord
from ttt_lab.evaluation.exact import exact_suite, resolve_mode, unavailable_reason
from ttt_lab.evaluation.metric_names import TRAINING_SUITE
from ttt_lab.evaluation.suite import suite_examples
from ttt_lab.evaluation.summary import Summary, summarise
from ttt_lab.train.runtime import Runtime, resolve


def evaluate_model(model, tokenizer, cfg: Config, games: int, temperature: float = 0.0,
                   suite: tuple[SuiteEntry, ...] = TRAINING_SUITE, *, runtime: Runtime | None = None) -> list[Summary]:
    """Win/draw/loss of `model` against each entry: exact from its game tree where `eval.mode`
    allows (greedy, or sampling bare moves), else `games` sampled games each, half moving first
    (under `runtime`'s precision, resolved from `cfg` when not given)."""
    import dataclasses

    import torch

    bf16 = (runtime or resolve(cfg)).bf16
    if policy := _exact_policy(model, tokenizer, cfg, temperature, bf16):
        was_training = model.training
        try:
            # greedy: every opponent reply is in the tree anyway; add the best response's summary
            return exact_suite(policy, cfg, suite, exploiter=temperature == 0)  # type: ignore[return-value]
        finally:
            model.train(was_training)

    small = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, games=games))
    out = []
    for i, entry in enumerate(suite):
        examples = suite_examples(small, i, entry)
        gen = torch.Generator().manual_seed(cfg.seed + i)
        rollouts = play_rollouts(model, tokenizer, examples, cfg.env, suite_opponent(entry),
                                 Sampling(temperature, cfg.player.max_new_tokens, bf16), generator=gen)
        out.append(summarise(entry.name, [_played(r.record) for r in rollouts]))
    return out


def _played(record: GameRecord | None) -> GameRecord:
    """A rollout's record: `play_rollouts` sets it on every rollout it returns."""
    assert record is not None
    return record


def _exact_policy(model, tokenizer, cfg: Config, temperature: float, bf16: bool):
    """The model's move distribution when the tree is to be walked, else None (sampled). Greedy:
    its every-reply tree walked at the training's precision (`greedy_walked`)."""
    from ttt_lab.players.distributions import ScoredDistribution

    reason = unavailable_reason(cfg, temperature=temperature, scripted=False, readable=True)
    if resolve_mode(cfg, reason)[0] != "exact":
        return None
    p = cfg.player
    if temperature == 0:
        return greedy_walked(model, tokenizer, cfg, bf16)
    return ScoredDistribution(model, tokenizer, temperature=temperature, max_new_tokens=p.max_new_tokens,
                              batch_size=max(1, cfg.eval.batch_size // 9))


def greedy_walked(model, tokenizer, cfg: Config, bf16: bool):
    """`model`'s greedy policy with its every-reply tree kept (`evaluation.trees`): a tree kept for
    the same weights (DAgger's last walk) is read, else walked as the training computes it (under
    bf16: through a bf16 copy of the weights, as rollouts are) and kept under `model`'s own weights."""
    from ttt_lab.engine.rollout import generation_model
    from ttt_lab.evaluation.trees import walked_by

    def walker():
        weights, cast = generation_model(model, bf16)
        return greedy_policy(weights, tokenizer, cfg, bf16=cast)

    policy = greedy_policy(model, tokenizer, cfg, bf16=bf16)
    walked_by(policy, walker, cfg)
    return policy


def greedy_policy(weights, tokenizer, cfg: Config, *, bf16: bool = False):
    """The greedy reply distribution of the model `weights` (under bf16 autocast with `bf16`), as
    the training's walks ask it: the evaluation's batch size, the player's reply length."""
    from ttt_lab.players.distributions import GreedyDistribution
    from ttt_lab.players.hf import HFPlayer

    return GreedyDistribution(HFPlayer.from_model(weights, tokenizer, device=cfg.model.device,
                                                  max_new_tokens=cfg.player.max_new_tokens,
                                                  batch_size=cfg.eval.batch_size, seed=cfg.seed, bf16=bf16))
