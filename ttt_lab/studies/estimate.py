"""A sweep's wall time, estimated before it runs from the games each planned trial plays (its
warm-up's teacher games times epochs, its RL phases' updates times games per update) at rates of
the tiny model on the slowest CPU path measured (fp32, AVX2; docs/benchmarks.md), plus a fixed cost
for the process and its evaluation: a rough figure for choosing seeds and workers, not a promise."""

from __future__ import annotations

from ttt_lab.config.schema import Config

SFT_GAMES_PER_S = 150.0
RL_GAMES_PER_S = 150.0
START_S = 20.0
"""A trial's fixed cost: the process, the imports, the config, the store, the exact evaluation."""


def trial_games(cfg: Config) -> tuple[int, int]:
    """(warm-up game passes, RL games) of one training."""
    from ttt_lab.train.phase_data import phase_steps

    t = cfg.train
    sft = t.sft.num_games * t.sft.epochs if t.sft.enabled else 0
    return sft, sum(phase_steps(cfg, p) * p.batch_size for p in t.phases)


def trial_seconds(cfg: Config) -> float:
    sft, rl = trial_games(cfg)
    return START_S + sft / SFT_GAMES_PER_S + rl / RL_GAMES_PER_S


def text(seconds: float) -> str:
    return f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
