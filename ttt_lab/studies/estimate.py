"""A sweep's wall time, estimated before it runs from the games each planned trial plays (its RL
phases' updates times games per update, its warm-up's teacher games times epochs, a warm-up paid
once by every trial that shares it) at rates of the tiny model on one torch thread of the slowest
CPU path measured (fp32, AVX2; docs/benchmarks.md), plus a fixed cost per trial for the process,
the configs, the store and the evaluation: a rough figure for choosing seeds and workers, not a
promise."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ttt_lab.config.schema import Config

RL_GAMES_PER_S = 150.0
"""RL games a second, generation and update together, at 128 games an update."""
SFT_GAMES_PER_S = 150.0
"""Teacher games a second in one warm-up epoch."""
TREE_GAMES = 750
"""The games of one teacher tree (every opponent reply, both sides)."""
START_S = 20.0
"""A trial's fixed cost: the process, the imports, the config, the store, the exact evaluation."""


def trial_games(cfg: Config) -> tuple[int, int]:
    """(warm-up game passes, RL games) of one training."""
    from ttt_lab.train.phase_data import phase_steps

    t = cfg.train
    sft = (t.sft.num_games + TREE_GAMES * t.sft.teacher_trees) * t.sft.epochs if t.sft.enabled else 0
    return sft, sum(phase_steps(cfg, p) * p.batch_size for p in t.phases)


def trial_seconds(cfg: Config) -> float:
    """One trial's time, its warm-up aside (`warm_up`)."""
    return START_S + trial_games(cfg)[1] / RL_GAMES_PER_S


def warm_up(cfg: Config) -> tuple[str, float]:
    """The warm-up's identity (what its cache is keyed on, the base model's content aside) and
    its time: trials with one identity pay it once."""
    from ttt_lab.train.pipeline import warm_up_settings

    if not cfg.train.sft.enabled:
        return "", 0.0
    key = json.dumps(warm_up_settings(cfg), sort_keys=True, default=str)
    return key, trial_games(cfg)[0] / SFT_GAMES_PER_S


def study_seconds(trials: Iterable[tuple[float, tuple[str, float]]]) -> float:
    """Trial time summed over workers: each trial's own time, each distinct warm-up once."""
    trials = list(trials)
    return sum(s for s, _ in trials) + sum(dict(w for _, w in trials if w[0]).values())


def text(seconds: float) -> str:
    return f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
