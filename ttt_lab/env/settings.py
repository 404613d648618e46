"""Typed settings of the environment and its datasets, with validation.

These dataclasses are the single source of truth for defaults: the Hydra schema registers
them as structured configs, so YAML files only override. `validate()` runs after any
composition and raises `InvalidSetting` naming the dotted field, the value and what is
allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from ttt_lab.errors import InvalidSetting

THINK_MODES = ("required", "optional", "off")
PENALTY_MODES = ("flat", "per_move", "forfeit")
SAMPLINGS = ("stratified", "iid")
FIRST_PLAYERS = ("alternate", "model", "opponent", "random")
SYMBOL_CHOICES = ("X", "O", "alternate", "random")


def check_number(path: str, v: Any, lo: float | None = None, hi: float | None = None) -> None:
    ok = not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)
    ok = ok and (lo is None or v >= lo) and (hi is None or v <= hi)
    if not ok:
        bounds = f" between {lo} and {hi}" if hi is not None else f" of at least {lo}" if lo is not None else ""
        raise InvalidSetting(path, v, f"a finite number{bounds}")


def check_integer(path: str, v: Any, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise InvalidSetting(path, v, f"an integer of at least {lo}")


def check_one_of(path: str, v: Any, allowed: tuple[str, ...]) -> None:
    if v not in allowed:
        raise InvalidSetting(path, v, " | ".join(allowed))


@dataclass
class PenaltyConfig:
    mode: str = "flat"
    """flat: -amount once if any move was invalid; per_move: -amount each, down to -cap;
    forfeit: the first invalid move loses the game (no extra penalty)."""
    amount: float = 0.1
    cap: float = 0.5

    def validate(self, prefix: str = "env.penalty") -> None:
        check_one_of(f"{prefix}.mode", self.mode, PENALTY_MODES)
        check_number(f"{prefix}.amount", self.amount, 0.0)
        check_number(f"{prefix}.cap", self.cap, 0.0)


@dataclass
class RewardConfig:
    win: float = 1.0
    draw: float = 0.5
    loss: float = 0.0
    turn_cap: float = 0.0
    outcome_weight: float = 1.0
    format_weight: float = 0.2
    invalid_weight: float = 1.0

    def validate(self, prefix: str = "env.reward") -> None:
        for f in fields(self):
            check_number(f"{prefix}.{f.name}", getattr(self, f.name))


@dataclass
class EnvConfig:
    think: str = "optional"
    """Whether replies must reason in <think>...</think> before the move: required | optional | off."""
    max_model_turns: int = 10
    """Cap on the model's messages in one game; every message counts, retries included."""
    penalty: PenaltyConfig = field(default_factory=PenaltyConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)

    def validate(self, prefix: str = "env") -> EnvConfig:
        check_one_of(f"{prefix}.think", self.think, THINK_MODES)
        check_integer(f"{prefix}.max_model_turns", self.max_model_turns, 1)
        self.penalty.validate(f"{prefix}.penalty")
        self.reward.validate(f"{prefix}.reward")
        return self


@dataclass
class DatasetConfig:
    size: int = 1024
    """Number of examples (prompts); each is played `num_generations` times in training."""
    p_min: float = 0.2
    p_max: float = 0.7
    """Range of the opponent's random-move probability."""
    num_strata: int = 32
    sampling: str = "stratified"
    """stratified: every batch holds every stratum equally often (within one); iid: independent draws."""
    examples_per_batch: int = 32
    first_player: str = "alternate"
    model_symbol: str = "X"
    """Symbol the model is shown as; the published environment always showed X."""

    def validate(self, prefix: str = "dataset") -> DatasetConfig:
        check_integer(f"{prefix}.size", self.size, 1)
        check_number(f"{prefix}.p_min", self.p_min, 0.0, 1.0)
        check_number(f"{prefix}.p_max", self.p_max, 0.0, 1.0)
        if self.p_min > self.p_max:
            raise InvalidSetting(
                f"{prefix}.p_min", self.p_min, f"a number no larger than {prefix}.p_max ({self.p_max})"
            )
        check_integer(f"{prefix}.num_strata", self.num_strata, 1)
        check_one_of(f"{prefix}.sampling", self.sampling, SAMPLINGS)
        check_integer(f"{prefix}.examples_per_batch", self.examples_per_batch, 1)
        check_one_of(f"{prefix}.first_player", self.first_player, FIRST_PLAYERS)
        check_one_of(f"{prefix}.model_symbol", self.model_symbol, SYMBOL_CHOICES)
        return self
