"""Fast games between two table opponents: the tight loop the environment benchmark times."""

from __future__ import annotations

from ttt_lab.game.opponents import TableOpponent
from ttt_lab.game.solver import table


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
