"""Every game a player can meet: at each of its turns the opponent plays every legal move.

A greedy player's tree is small (at most 384 games moving first, 945 moving second) and
exact: it holds every position the player can reach against *any* opponent, so a loss in it
is a line some opponent can force, not a sample. A teacher's tree is a warm-up dataset that
covers every reply an opponent can make, the rare blocking positions as often as the rest.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from ttt_lab.env.dataset import Example
from ttt_lab.env.driver import Player
from ttt_lab.env.episode import Episode
from ttt_lab.env.parser import parse
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.solver import table


class ToldOpponent:
    """An opponent that plays the cell it was last told (the tree walk tells it each branch)."""

    cell = -1

    def reply(self, board: str, seed: int) -> int:
        return self.cell

    def __repr__(self) -> str:
        return "every-reply"


def branch(ep: Episode) -> Episode:
    """A copy of the conversation that can go on differently (its own messages, moves, counts)."""
    child = copy.copy(ep)
    child.messages, child.moves, child.invalid_kinds = list(ep.messages), list(ep.moves), dict(ep.invalid_kinds)
    return child


def _roots(env: EnvConfig, opponent: ToldOpponent, model_symbol: str, sides: Sequence[bool],
           seed: int, replies: Callable[[int], Sequence[int]] | None = None) -> list[Episode]:
    roots: list[Episode] = []
    for first in sides:
        ex = Example(index=len(roots), seed=seed, p_random=0.0, model_first=first, model_symbol=model_symbol,
                     stratum=-1)
        for cell in [-1] if first else (replies(0) if replies else range(9)):
            opponent.cell = cell
            roots.append(Episode(ex, env, opponent))
    return roots


def tree_symbol(model_symbol: str, tree: int = 0) -> str:
    """The symbol the model is shown in tree number `tree`: the setting's when it is X or O,
    otherwise (alternate, random) X and O in turn."""
    return model_symbol if model_symbol in ("X", "O") else "XO"[tree % 2]


def play_tree(player: Player, env: EnvConfig, *, model_symbol: str = "X", sides: Sequence[bool] = (True, False),
              seed: int = 0, opponent_replies: Callable[[int], Sequence[int]] | None = None) -> list[GameRecord]:
    """The games of `player` against every sequence of opponent replies, moving first and/or
    second (`sides`: model_first values). A valid move that does not end the game branches
    into one game per legal reply; an invalid one gets its feedback and no branch. Records
    come back in a fixed order (depth-first by round). `seed` is every game's example seed
    (a scripted player's tie-breaks follow it)."""
    env.validate()
    t = table()
    opponent = ToldOpponent()
    active = _roots(env, opponent, model_symbol, sides, seed, opponent_replies)
    done: list[Episode] = []
    while active:
        replies = player.respond(active)
        if len(replies) != len(active):
            raise ValueError(f"player {player!r} returned {len(replies)} replies for {len(active)} turns")
        following: list[Episode] = []
        for ep, reply in zip(active, replies, strict=True):
            p = parse(reply, ep.board, env.think)
            after = t.children[ep.state][p.cell] if p.valid and p.cell is not None else None
            cells = ([-1] if after is None or t.terminal[after]
                     else list(opponent_replies(after) if opponent_replies else t.legal[after]))
            for cell in cells:
                child = ep if len(cells) == 1 else branch(ep)
                opponent.cell = cell
                child.step(reply)
                (done if child.done else following).append(child)
        active = following
    return [ep.record() for ep in done]
