"""Fast games between two table opponents: the loop behind benchmarks, audits and baselines."""

from __future__ import annotations

from dataclasses import dataclass

from ttt_lab.game.opponents import TableOpponent
from ttt_lab.game.solver import table


@dataclass(frozen=True, slots=True)
class GameResult:
    moves: tuple[int, ...]
    winner: str | None
    final_state: int


def play_game(
    x: TableOpponent, o: TableOpponent, seed: int, p_x: float | None = None, p_o: float | None = None
) -> GameResult:
    """One game from the empty board; each side's randomness is seeded per turn by `seed`."""
    t = table()
    children, terminal = t.children, t.terminal
    kx, ko = x.key(seed), o.key(seed)
    px = x.p_random if p_x is None else p_x
    po = o.p_random if p_o is None else p_o
    state, moves, x_turn = 0, [], True
    while not terminal[state]:
        cell = x.reply_state(state, kx, px) if x_turn else o.reply_state(state, ko, po)
        moves.append(cell)
        state = children[state][cell]
        x_turn = not x_turn
    return GameResult(tuple(moves), t.winner[state], state)


def play_many(x: TableOpponent, o: TableOpponent, seeds: range | list[int]) -> dict[str, int]:
    """Tally of winners ('X', 'O', 'draw') over one game per seed."""
    t = table()
    children, terminal, winners = t.children, t.terminal, t.winner
    rx, ro = x.reply_state, o.reply_state
    px, po = x.p_random, o.p_random
    kx_of, ko_of = x.key, o.key
    tally = {"X": 0, "O": 0, "draw": 0}
    for seed in seeds:
        kx, ko = kx_of(seed), ko_of(seed)
        state = 0
        while True:
            state = children[state][rx(state, kx, px)]
            if terminal[state]:
                break
            state = children[state][ro(state, ko, po)]
            if terminal[state]:
                break
        tally[winners[state] or "draw"] += 1
    return tally
