"""Perfect play over every reachable position, computed once into a table.

States are numbered in breadth-first order from the empty board (state 0), so a state's
children always have larger numbers and one backward pass solves the game. `value` is
the perfect-play value for X (+1 win, 0 draw, -1 loss). `optimal` holds every move that
keeps the value for the side to move; `fastest` the subset that wins soonest or loses
latest (the published environment's scoring), scored as +/-(10 - marks at the end);
`exploiting()` the subset that wins most often against a uniformly random opponent when the
same rule plays every later move (exact fractions: symmetric moves tie exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import TypeVar

from ttt_lab.errors import InvalidBoard
from ttt_lab.game.board import EMPTY, LINES, validate_board

NO_CHILD = -1


@dataclass(frozen=True, slots=True)
class SolverTable:
    boards: tuple[str, ...]
    index: dict[str, int]
    children: tuple[tuple[int, ...], ...]
    """9 entries per state: the child state for each cell, or NO_CHILD where illegal."""
    legal: tuple[tuple[int, ...], ...]
    winner: tuple[str | None, ...]
    terminal: tuple[bool, ...]
    x_to_move: tuple[bool, ...]
    value: tuple[int, ...]
    score: tuple[int, ...]
    optimal: tuple[tuple[int, ...], ...]
    fastest: tuple[tuple[int, ...], ...]
    code: tuple[int, ...]
    """Base-3 code of each board (X=1, O=2): a numbering that does not depend on this table."""

    def state(self, board: str) -> int:
        """The state number of `board`; raises `InvalidBoard` with the reason if it cannot occur."""
        try:
            return self.index[board]
        except (KeyError, TypeError):
            validate_board(board)
            raise InvalidBoard(board, "it cannot be reached in play") from None


def board_code(board: str) -> int:
    code = 0
    for s in board:
        code = 3 * code + (0 if s == "." else 1 if s == "X" else 2)
    return code


def _winner(board: str) -> str | None:
    for a, b, c in LINES:
        s = board[a]
        if s != "." and s == board[b] == board[c]:
            return s
    return None


def _expand() -> tuple[list[str], dict[str, int], list[list[int]], list[str | None]]:
    boards, index, children, winners = [EMPTY], {EMPTY: 0}, [], []
    i = 0
    while i < len(boards):
        board = boards[i]
        w = _winner(board)
        winners.append(w)
        row = [NO_CHILD] * 9
        if w is None:
            mark = "X" if board.count("X") == board.count("O") else "O"
            for cell in range(9):
                if board[cell] == ".":
                    child = board[:cell] + mark + board[cell + 1 :]
                    j = index.get(child)
                    if j is None:
                        j = index[child] = len(boards)
                        boards.append(child)
                    row[cell] = j
        children.append(row)
        i += 1
    return boards, index, children, winners


T = TypeVar("T", int, Fraction)


def _best(moves_scores: Sequence[tuple[int, T]], maximise: bool) -> tuple[T, tuple[int, ...]]:
    best = max(s for _, s in moves_scores) if maximise else min(s for _, s in moves_scores)
    return best, tuple(m for m, s in moves_scores if s == best)


@cache
def exploiting() -> tuple[tuple[int, ...], ...]:
    """Per state, the optimal moves that maximise the mover's chance of beating a random opponent.

    Built on first use (exact fractions), apart from `table()` so that only the
    rule that needs it pays. Backward over the states: `wins[i]` is the chance that the side to
    move at `i` wins playing this rule against random replies; `after[j]` the chance that the
    side that just moved into `j` wins, its opponent now moving at random."""
    t = table()
    children, optimal = t.children, t.optimal
    n = len(children)
    wins, after = [Fraction(0)] * n, [Fraction(0)] * n
    best: list[tuple[int, ...]] = [()] * n
    for i in range(n - 1, -1, -1):
        row = children[i]
        moves = [c for c in range(9) if row[c] != NO_CHILD]
        if not moves:
            after[i] = Fraction(1 if t.winner[i] is not None else 0)
            continue
        scores = [(c, after[row[c]]) for c in optimal[i]]
        wins[i], best[i] = _best(scores, True)
        after[i] = sum((wins[row[c]] for c in moves if not t.terminal[row[c]]), Fraction(0)) / len(moves)
    return tuple(best)


@cache
def table() -> SolverTable:
    """The solved game; built on first use (tens of milliseconds) and shared afterwards."""
    boards, index, children, winners = _expand()
    n = len(boards)
    value, score = [0] * n, [0] * n
    optimal: list[tuple[int, ...]] = [()] * n
    fastest: list[tuple[int, ...]] = [()] * n
    x_to_move = [b.count("X") == b.count("O") for b in boards]
    for i in range(n - 1, -1, -1):
        row, board = children[i], boards[i]
        moves = [c for c in range(9) if row[c] != NO_CHILD]
        if not moves:
            w = winners[i]
            marks = 9 - board.count(".")
            value[i] = 1 if w == "X" else -1 if w == "O" else 0
            score[i] = value[i] * (10 - marks)
            continue
        maximise = x_to_move[i]
        value[i], optimal[i] = _best([(c, value[row[c]]) for c in moves], maximise)
        score[i], fastest[i] = _best([(c, score[row[c]]) for c in moves], maximise)
    legal = tuple(tuple(c for c in range(9) if row[c] != NO_CHILD) for row in children)
    return SolverTable(
        boards=tuple(boards),
        index=index,
        children=tuple(tuple(r) for r in children),
        legal=legal,
        winner=tuple(winners),
        terminal=tuple(not m for m in legal),
        x_to_move=tuple(x_to_move),
        value=tuple(value),
        score=tuple(score),
        optimal=tuple(optimal),
        fastest=tuple(fastest),
        code=tuple(board_code(b) for b in boards),
    )


def value(board: str) -> int:
    """Perfect-play value of `board` for X: +1 X wins, 0 draw, -1 O wins."""
    t = table()
    return t.value[t.state(board)]


def optimal_moves(board: str) -> frozenset[int]:
    """Every move that keeps the perfect-play value for the side to move (empty when over)."""
    t = table()
    return frozenset(t.optimal[t.state(board)])


def fastest_moves(board: str) -> frozenset[int]:
    """The optimal moves that win soonest, or lose latest (a subset of `optimal_moves`)."""
    t = table()
    return frozenset(t.fastest[t.state(board)])


def exploiting_moves(board: str) -> frozenset[int]:
    """The optimal moves that win most often against a random opponent (a subset of `optimal_moves`)."""
    t = table()
    return frozenset(exploiting()[t.state(board)])


def candidates(scoring: str) -> tuple[tuple[int, ...], ...]:
    """Per state, the moves a built-in minimax chooses among under `scoring` (value | fast | exploit)."""
    if scoring == "exploit":
        return exploiting()
    t = table()
    return t.fastest if scoring == "fast" else t.optimal


def reachable_positions() -> tuple[str, ...]:
    """Every position that can occur in play, empty board first."""
    return table().boards
