"""The reward rubric: outcome, format and invalid-move penalty, each also a metric."""

from __future__ import annotations

from dataclasses import dataclass

from ttt_lab.env.settings import EnvConfig

WIN, DRAW, LOSS, TURN_CAP, FORFEIT = "win", "draw", "loss", "turn_cap", "forfeit"


@dataclass(frozen=True, slots=True)
class Rewards:
    outcome: float
    format: float
    invalid: float
    """The invalid-move penalty, zero or negative."""
    total: float

    def as_dict(self) -> dict[str, float]:
        return {"outcome": self.outcome, "format": self.format, "invalid": self.invalid, "total": self.total}


def outcome_reward(outcome: str, env: EnvConfig) -> float:
    r = env.reward
    if outcome == WIN:
        return r.win
    if outcome == DRAW:
        return r.draw
    if outcome == TURN_CAP:
        return r.turn_cap
    return r.loss


def invalid_penalty(invalid_moves: int, env: EnvConfig) -> float:
    p = env.penalty
    if invalid_moves == 0 or p.mode == "forfeit":
        return 0.0
    if p.mode == "flat":
        return -p.amount
    return -min(p.amount * invalid_moves, p.cap)


def score(outcome: str, messages: int, messages_in_format: int, invalid_moves: int, env: EnvConfig) -> Rewards:
    """Weighted total of the three components; `format` is the share of messages in format."""
    o = outcome_reward(outcome, env)
    f = messages_in_format / messages if messages else 0.0
    i = invalid_penalty(invalid_moves, env)
    r = env.reward
    return Rewards(o, f, i, r.outcome_weight * o + r.format_weight * f + r.invalid_weight * i)
