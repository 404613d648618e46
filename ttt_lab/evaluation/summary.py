"""Per-opponent summaries of game records, and their metric names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.stats.rates import sign_test, wilson


@dataclass(frozen=True)
class Summary:
    opponent: str
    games: int
    wins: int
    draws: int
    losses: int
    """Every game not won or drawn: lost, forfeited or stopped by the turn cap."""
    model_messages: int
    invalid_moves: int
    messages_in_format: int
    model_turns_mean: float
    reward_mean: float
    seconds: float
    points: tuple[float, ...] = ()
    """Each game's points in play order (win 1, draw 1/2, anything else 0): what a paired
    comparison of two policies on the same games reads."""

    mode = "sampled"

    def rate(self, k: int) -> float:
        return k / self.games if self.games else 0.0

    def outcome_rates(self) -> dict[str, tuple[float, float, float]]:
        """win / draw / loss: (rate, lower, upper), the bounds a 95 % Wilson interval."""
        return {name: (self.rate(k), *self.interval(k))
                for name, k in (("win", self.wins), ("draw", self.draws), ("loss", self.losses))}

    def interval(self, k: int) -> tuple[float, float]:
        return wilson(k, self.games)

    @property
    def invalid_rate(self) -> float:
        """Invalid moves per model message."""
        return self.invalid_moves / self.model_messages if self.model_messages else 0.0

    @property
    def invalid_interval(self) -> tuple[float, float]:
        """Wilson 95 % interval of `invalid_rate` over model messages (one game's messages are
        not independent, so read it as a lower bound on the spread)."""
        return wilson(self.invalid_moves, self.model_messages)

    @property
    def format_rate(self) -> float:
        return self.messages_in_format / self.model_messages if self.model_messages else 0.0

    @property
    def points_mean(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else float("inf")

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        p = f"{prefix}/{self.opponent}"
        out = {}
        for name, k in (("win", self.wins), ("draw", self.draws), ("loss", self.losses)):
            lo, hi = self.interval(k)
            out[f"{p}/{name}_rate"] = self.rate(k)
            out[f"{p}/{name}_rate_lo"] = lo
            out[f"{p}/{name}_rate_hi"] = hi
        out[f"{p}/invalid_rate"] = self.invalid_rate
        out[f"{p}/invalid_rate_lo"], out[f"{p}/invalid_rate_hi"] = self.invalid_interval
        out[f"{p}/format_rate"] = self.format_rate
        out[f"{p}/mean_turns"] = self.model_turns_mean
        out[f"{p}/reward"] = self.reward_mean
        out[f"{p}/games"] = float(self.games)
        out[f"{prefix}/mode"] = 0.0
        return out


def summarise(opponent: str, records: Sequence[GameRecord], seconds: float = 0.0) -> Summary:
    n = len(records)
    wins = sum(r.outcome == WIN for r in records)
    draws = sum(r.outcome == DRAW for r in records)
    messages = sum(r.model_turns for r in records)
    return Summary(
        opponent=opponent,
        games=n,
        wins=wins,
        draws=draws,
        losses=n - wins - draws,
        model_messages=messages,
        invalid_moves=sum(r.invalid_moves for r in records),
        messages_in_format=sum(r.messages_in_format for r in records),
        model_turns_mean=messages / n if n else 0.0,
        reward_mean=sum(r.rewards.total for r in records) / n if n else 0.0,
        seconds=seconds,
        points=tuple(1.0 if r.outcome == WIN else 0.5 if r.outcome == DRAW else 0.0 for r in records),
    )


@dataclass(frozen=True)
class Paired:
    """Two policies on the same games (same examples, same opponent seeds): the games the second
    scores more points in, fewer, and the exact two-sided sign test of that split. Far more
    sensitive than comparing two rates' intervals: games both play alike cancel out."""

    opponent: str
    better: int
    worse: int
    p_value: float
    points_delta: float
    """Mean points per game, second minus first."""

    def metrics(self, prefix: str = "eval_gain") -> dict[str, float]:
        p = f"{prefix}/{self.opponent}"
        return {f"{p}/better": float(self.better), f"{p}/worse": float(self.worse), f"{p}/p_value": self.p_value,
                f"{p}/points_delta": self.points_delta}


def paired(before: Summary, after: Summary) -> Paired:
    """`after` against `before` game by game; raises when they were not played on the same games.
    Exact summaries (no games) differ by their exact points: nothing to test, p is 0 or 1."""
    if before.mode == "exact" or after.mode == "exact":
        delta = after.points_mean - before.points_mean
        return Paired(after.opponent, int(delta > 0), int(delta < 0), 1.0 if delta == 0 else 0.0, delta)
    if before.opponent != after.opponent or len(before.points) != len(after.points) or not after.points:
        raise ValueError(f"a paired comparison needs the same games: {before.opponent} ({len(before.points)} games) "
                         f"against {after.opponent} ({len(after.points)})")
    better = sum(b > a for a, b in zip(before.points, after.points, strict=True))
    worse = sum(b < a for a, b in zip(before.points, after.points, strict=True))
    delta = (sum(after.points) - sum(before.points)) / len(after.points)
    return Paired(after.opponent, better, worse, sign_test(better, worse), delta)
