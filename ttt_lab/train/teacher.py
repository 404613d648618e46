"""The warm-up's teacher data aimed at the lines that decide the evaluation.

A deterministic teacher (minimax, ties broken by the lowest cell) plays one move per position,
so the data never splits a position's weight between equally good moves. Its games against
every tie-break branch of the optimal opponent (`optimal_lines`) hold each position the
evaluation's optimal opponent can lead it to; the games where the model moves first are
weighted up (`first_weight`) so their few positions are never rare. `coverage` counts the
decisions per position and how many of those target positions the data holds.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ttt_lab.env.parser import parse
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import EnvConfig
from ttt_lab.env.tree import play_tree
from ttt_lab.game.solver import candidates, table
from ttt_lab.players.scripted import ScriptedPlayer


def optimal_lines(teacher: ScriptedPlayer, env: EnvConfig, *, model_symbol: str = "X", seed: int = 0,
                  sides: Sequence[bool] = (True, False)) -> list[GameRecord]:
    """The teacher's games against every tie-break branch of the optimal opponent (minimax,
    `value` scoring: every value-keeping reply), moving first and second."""
    optimal = candidates("value")
    return play_tree(teacher, env, model_symbol=model_symbol, seed=seed, sides=sides,
                     opponent_replies=lambda s: optimal[s])


@dataclass(frozen=True)
class Decision:
    message: int
    """Index of the assistant message in the record's messages."""
    state: int
    """Solver state the model answered (side to move: the model)."""
    cell: int | None
    """The cell the reply played; None when the reply was invalid."""


def decisions(record: GameRecord, think: str = "off") -> list[Decision]:
    """Each model reply of `record` with the position it answered (replayed from the moves)."""
    t = table()
    state, moves, out = 0, list(record.moves), []
    if moves and moves[0][0] == "opponent":
        state = t.children[state][moves.pop(0)[1]]
    for i, m in enumerate(record.messages):
        if m["role"] != "assistant":
            continue
        p = parse(m["content"], t.boards[state], think)
        cell = p.cell if p.valid else None
        out.append(Decision(i, state, cell))
        if cell is None:
            continue
        who, played = moves.pop(0)
        assert who == "model" and played == cell, (who, played, cell)
        state = t.children[state][cell]
        if moves and moves[0][0] == "opponent":
            state = t.children[state][moves.pop(0)[1]]
    return out


def position_counts(records: Sequence[GameRecord], think: str = "off") -> Counter[int]:
    """Decisions per solver state over `records`."""
    return Counter(d.state for r in records for d in decisions(r, think))


def coverage(records: Sequence[GameRecord], targets: Sequence[int] = (), think: str = "off") -> dict[str, float]:
    """What the data teaches: games, decisions (moving first / second), distinct positions, and
    of the `targets` (the positions the optimal opponent reaches) how many are covered, with the
    fewest and the median decisions per target."""
    counts = position_counts(records, think)
    t = table()
    first = sum(n for s, n in counts.items() if t.x_to_move[s])
    out: dict[str, float] = {"games": len(records), "decisions": sum(counts.values()), "decisions_first": first,
           "decisions_second": sum(counts.values()) - first, "positions": len(counts)}
    if targets:
        per = [counts.get(s, 0) for s in targets]
        out |= {"targets": len(targets), "targets_covered": sum(n > 0 for n in per), "target_min": min(per),
                "target_median": statistics.median(per)}
    return out


def target_positions(lines: Sequence[GameRecord], think: str = "off") -> list[int]:
    """The distinct positions of `lines` (the optimal opponent's), in order of first appearance."""
    return list(dict.fromkeys(d.state for r in lines for d in decisions(r, think)))


def covering_games(lines: Sequence[GameRecord], think: str = "off") -> list[GameRecord]:
    """A few of `lines` that together hold every one of their positions (greedy cover): the
    diagnostic's teacher-forced pass reads each position at least once for less compute."""
    left = set(target_positions(lines, think))
    per = [(r, {d.state for d in decisions(r, think)}) for r in lines]
    out = []
    while left:
        r, states = max(per, key=lambda rs: len(rs[1] & left))
        out.append(r)
        left -= states
    return out


def teacher_cell(teacher: ScriptedPlayer, state: int, seed: int = 0) -> int:
    """The teacher's move at `state` (its own noise off)."""
    policy = teacher.policy
    return policy.reply_state(state, policy.key(seed), 0.0)


def is_optimal(state: int, cell: int | None) -> bool:
    """Whether `cell` keeps the position's game-theoretic value."""
    return cell is not None and cell in table().optimal[state]
