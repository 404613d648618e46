"""Evaluating a policy checkpoint (or a model in memory) with the batched rollout engine."""

from __future__ import annotations

from ttt_lab.config.build import suite_opponent
from ttt_lab.config.schema import Config, SuiteEntry
from ttt_lab.evaluation.suite import suite_examples
from ttt_lab.evaluation.summary import Summary, summarise
from ttt_lab.train.rollout import Sampling, play_rollouts
from ttt_lab.train.runtime import use_bf16

TRAINING_SUITE = (SuiteEntry("random", opponent="random"), SuiteEntry("optimal"))


def evaluate_model(model, tokenizer, cfg: Config, games: int, temperature: float = 0.0,
                   suite: tuple[SuiteEntry, ...] = TRAINING_SUITE) -> list[Summary]:
    """Win/draw/loss of `model` against each entry, `games` games each, half moving first."""
    import dataclasses

    import torch

    small = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, games=games))
    out = []
    for i, entry in enumerate(suite):
        examples = suite_examples(small, i, entry)
        gen = torch.Generator().manual_seed(cfg.seed + i)
        rollouts = play_rollouts(model, tokenizer, examples, cfg.env, suite_opponent(entry),
                                 Sampling(temperature, cfg.player.max_new_tokens, use_bf16(cfg)), generator=gen)
        out.append(summarise(entry.name, [r.record for r in rollouts]))
    return out
