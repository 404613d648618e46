"""Opponents: answer a position with a move, reproducibly from (example seed, position).

Built-in opponents work on the solver table's state numbers (`reply_state`), with the
per-turn hash precomputed per position; `reply(board, seed)` is the general interface
that user-defined opponents (loaded through Hydra `_target_`) implement.
"""

from __future__ import annotations

from functools import cache
from typing import Protocol, runtime_checkable

from ttt_lab.errors import InvalidSetting
from ttt_lab.game.seeding import OPPONENT_STREAM, mix64, pick, position_key, seed_key, uniform
from ttt_lab.game.solver import SolverTable, candidates, table

TIE_BREAKS = ("random", "first", "last")
SCORINGS = ("value", "fast", "exploit")


@runtime_checkable
class Opponent(Protocol):
    def reply(self, board: str, seed: int) -> int:
        """The cell this opponent plays on `board` (side to move) in the example with `seed`."""


@cache
def position_keys() -> tuple[int, ...]:
    """The per-position half of every turn hash, by state number."""
    t = table()
    return tuple(position_key(code, xm) for code, xm in zip(t.code, t.x_to_move, strict=True))


def check_probability(field: str, p: object) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise InvalidSetting(field, p, "a number between 0 and 1")
    return float(p)


def check_choice(field: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidSetting(field, value, " | ".join(allowed))
    return str(value)


class TableOpponent:
    """Base of the built-in opponents: plays uniformly at random with probability `p_random`."""

    def __init__(self, p_random: float = 0.0, stream: int = OPPONENT_STREAM) -> None:
        self.p_random = check_probability("p_random", p_random)
        self.stream = stream
        self._table: SolverTable = table()
        self._pos_keys = position_keys()

    def key(self, seed: int) -> int:
        return seed_key(seed, self.stream)

    def reply(self, board: str, seed: int) -> int:
        state = self._table.state(board)
        if self._table.terminal[state]:
            raise ValueError(f"no move to make: the game on board {board!r} is over")
        return self.reply_state(state, self.key(seed), self.p_random)

    def reply_state(self, state: int, key: int, p_random: float) -> int:
        """Move for a non-terminal `state`, given the example's `key` and this game's `p_random`."""
        h = mix64(key ^ self._pos_keys[state])
        if p_random > 0.0 and uniform(h) < p_random:
            legal = self._table.legal[state]
            return legal[pick(h, len(legal))]
        return self.choose(state, h)

    def choose(self, state: int, h: int) -> int:
        raise NotImplementedError

    def choices(self, state: int) -> tuple[tuple[int, ...], bool]:
        """The cells `choose` picks among at `state`, and whether uniformly (False: always the first)."""
        raise NotImplementedError

    def distribution(self, state: int, p_random: float | None = None) -> dict[int, float]:
        """Each cell's probability at a non-terminal `state` over the example seeds: what the
        per-turn hash draws, read off instead of sampled (`p_random`: this game's, default the
        opponent's own)."""
        p = self.p_random if p_random is None else p_random
        legal = self._table.legal[state]
        out = dict.fromkeys(legal, p / len(legal)) if p > 0.0 else {}
        cells, uniform_pick = self.choices(state)
        cells = cells if uniform_pick else cells[:1]
        for c in cells:
            out[c] = out.get(c, 0.0) + (1.0 - p) / len(cells)
        return {c: q for c, q in out.items() if q > 0.0}


class RandomOpponent(TableOpponent):
    """A uniformly random legal move on every turn."""

    def __init__(self, p_random: float = 1.0, stream: int = OPPONENT_STREAM) -> None:
        super().__init__(p_random, stream)

    def choose(self, state: int, h: int) -> int:
        legal = self._table.legal[state]
        return legal[pick(h, len(legal))]

    def choices(self, state: int) -> tuple[tuple[int, ...], bool]:
        return self._table.legal[state], True

    def __repr__(self) -> str:
        return "RandomOpponent()"


class MinimaxOpponent(TableOpponent):
    """Perfect play, breaking ties among equally good moves by `tie_break`.

    `scoring='value'` treats every value-keeping move as equally good; `scoring='fast'`
    keeps only those that win soonest or lose latest; `scoring='exploit'` those that win most
    often against a uniformly random opponent (never-losing play that also exploits mistakes:
    about 96 % wins against random, against 87 % for `value`). `tie_break='first'` (lowest cell)
    reproduces the bias of the published environment's opponent.
    """

    def __init__(
        self,
        tie_break: str = "random",
        scoring: str = "value",
        p_random: float = 0.0,
        stream: int = OPPONENT_STREAM,
    ) -> None:
        super().__init__(p_random, stream)
        self.tie_break = check_choice("tie_break", tie_break, TIE_BREAKS)
        self.scoring = check_choice("scoring", scoring, SCORINGS)
        self._candidates = candidates(scoring)
        self._first = tie_break == "first"
        self._last = tie_break == "last"

    def choose(self, state: int, h: int) -> int:
        cands = self._candidates[state]
        if self._first:
            return cands[0]
        if self._last:
            return cands[-1]
        return cands[pick(h, len(cands))]

    def choices(self, state: int) -> tuple[tuple[int, ...], bool]:
        cands = self._candidates[state]
        if self._last:
            return cands[-1:], False
        return cands, not self._first

    def __repr__(self) -> str:
        return (
            f"MinimaxOpponent(tie_break={self.tie_break!r}, scoring={self.scoring!r}, "
            f"p_random={self.p_random})"
        )
