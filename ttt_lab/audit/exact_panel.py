"""The policy audit's panel on the exact tree walk: one tree of the policy against every reply
any panel member could play, evaluated once per member with that member's move probabilities.

Rates are expectations over the members' dice (their noise and random tie-breaks), not
estimates: no intervals, no distinct-game counting; the mass of paths cut below
`eval.min_prob` bounds every rate. Members whose moves cannot be read off (a user's opponent
without `distribution`) leave the audit to the sampled panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from ttt_lab.config.schema import Config
from ttt_lab.env.exact import Cut, Leaf, Node, OpponentDistribution, OpponentTurn, Tree, evaluate_tree
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.evaluation.trees import largest_of, policy_tree
from ttt_lab.game.board import threats
from ttt_lab.game.solver import table
from ttt_lab.game.symmetry import CELL_MAPS, INVERSES, transform


@dataclass(frozen=True)
class ExactMember:
    """One member's expected results against the policy; `unexplored`: probability of cut paths."""

    name: str
    win: float
    draw: float
    loss: float
    unexplored: float
    invalid: float
    """Expected invalid replies per game."""
    moves: float
    """Expected moves of the policy per game (the base of `optimal`)."""
    optimal: float
    """Expected moves that keep the perfect-play value."""
    fork: float
    """Probability that the policy lets the member set up two winning lines at once."""

    @property
    def held(self) -> float:
        return self.win + self.draw

    def as_dict(self) -> dict:
        u = self.unexplored
        return {"name": self.name, "mode": "exact", "win_rate": self.win, "draw_rate": self.draw,
                "draw_lo": self.draw, "draw_hi": min(1.0, self.draw + u), "loss_rate": self.loss,
                "loss_lo": self.loss, "loss_hi": min(1.0, self.loss + u), "held_rate": self.held,
                "held_lo": self.held, "held_hi": min(1.0, self.held + u), "unexplored": u,
                "invalid_per_game": self.invalid}


def member_distribution(opponent: object) -> OpponentDistribution | None:
    """The opponent's move probabilities per state, or None when they cannot be read off. A
    conjugated member plays its base's distribution on the turned board, turned back."""
    k = getattr(opponent, "k", None)
    base = getattr(opponent, "base", None)
    if k is not None and base is not None:
        inner = member_distribution(base)
        if inner is None:
            return None
        t = table()
        back = CELL_MAPS[INVERSES[k]]
        return lambda state: {back[c]: q for c, q in inner(t.index[transform(t.boards[state], k)]).items()}
    dist = getattr(opponent, "distribution", None)
    return dist if callable(dist) else None


@cache
def fork_open(state: int) -> bool:
    """The side to move at `state` has a reply that makes two winning threats while the other
    side has none: the policy, which just moved, allowed a fork."""
    t = table()
    board = t.boards[state]
    them = "X" if board.count("X") == board.count("O") else "O"
    me = "O" if them == "X" else "X"
    for c in t.legal[state]:
        after = t.children[state][c]
        if not t.terminal[after] and threats(t.boards[after], them) >= 2 and threats(t.boards[after], me) == 0:
            return True
    return False


@cache
def _keeping(state: int) -> frozenset[int]:
    """The positions a value-keeping move from `state` leads to."""
    t = table()
    return frozenset(t.children[state][c] for c in t.optimal[state])


def _path_stats(node: Node, dist: OpponentDistribution, memo: dict[int, tuple[float, float, float]]
                ) -> tuple[float, float, float]:
    """(expected moves, expected value-keeping moves, probability of a fork allowed) below `node`."""
    if isinstance(node, Leaf | Cut):
        return 0.0, 0.0, 0.0
    got = memo.get(id(node))
    if got is not None:
        return got
    moves = optimal = fork = 0.0
    if isinstance(node, OpponentTurn):
        for cell, q in dist(node.state).items():
            m, o, f = _path_stats(node.children[cell], dist, memo)
            moves, optimal, fork = moves + q * m, optimal + q * o, fork + q * f
        fork = 1.0 if fork_open(node.state) else fork
    else:
        keeping = _keeping(node.state)
        for q, _reply, child in node.replies:
            m, o, f = _path_stats(child, dist, memo)
            moved = isinstance(child, OpponentTurn) or (isinstance(child, Leaf) and child.outcome in (WIN, DRAW))
            kept = isinstance(child, Leaf) or (isinstance(child, OpponentTurn) and child.state in keeping)
            moves += q * (m + moved)
            optimal += q * (o + (moved and kept))
            fork += q * f
    memo[id(node)] = (moves, optimal, fork)
    return moves, optimal, fork


def _tree_stats(tree: Tree, dist: OpponentDistribution) -> tuple[float, float, float]:
    memo: dict[int, tuple[float, float, float]] = {}
    out = [0.0, 0.0, 0.0]
    for root in tree.roots:
        for i, v in enumerate(_path_stats(root.node, dist, memo)):
            out[i] += root.weight * v
    return out[0], out[1], out[2]


def exact_panel(cfg: Config, policy, members: list[tuple[str, OpponentDistribution]],
                on_level: Callable[[int], None] | None = None) -> list[ExactMember]:
    """Every member's expected results from one tree of `policy` (a `ReplyDistribution`): a greedy
    model's is the one its evaluation walked (`ttt_lab.evaluation.trees`)."""
    tree = policy_tree(policy, cfg, largest_of([d for _, d in members]), on_level=on_level)
    out = []
    for name, dist in members:
        totals = evaluate_tree(tree, dist)
        moves, optimal, fork = _tree_stats(tree, dist)
        out.append(ExactMember(name, totals.win, totals.draw, totals.loss, totals.unexplored, totals.invalid,
                               moves, optimal, fork))
    return out


__all__ = ["ExactMember", "exact_panel", "fork_open", "member_distribution"]
