"""The lines of an expanded tree: each path from a start to the end of its game, with its moves.

A greedy policy's every-reply tree (`ttt_lab.env.exact`) holds the games `play_tree` plays, one
leaf per game, so what is counted over those games (lines not held, forks allowed, moves that
keep the value) is read off the tree the evaluation already expanded instead of played again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ttt_lab.env.exact import Cut, Leaf, Node, OpponentTurn, Tree
from ttt_lab.env.parser import parse
from ttt_lab.game.solver import table


@dataclass(frozen=True, slots=True)
class Line:
    """One game of the tree, with what a `GameRecord` says of its moves and its end."""

    model_mark: str
    """The model's mark in the core board (X moves first)."""
    moves: tuple[tuple[str, int], ...]
    """(who, cell) in play order; who is 'model' or 'opponent'."""
    outcome: str
    invalid_moves: int


def _walk(node: Node, mark: str, moves: tuple[tuple[str, int], ...]) -> Iterator[Line]:
    if isinstance(node, Leaf):
        yield Line(mark, moves, node.outcome, node.invalid)
    elif isinstance(node, Cut):
        raise ValueError("the tree was cut below eval.min_prob: its lines are not all there")
    elif isinstance(node, OpponentTurn):
        for cell, reached in node.children.items():
            yield from _walk(reached, mark, (*moves, ("opponent", cell)))
    else:
        board = table().boards[node.state]
        for _q, reply, child in node.replies:
            p = parse(reply, board)  # an invalid reply moves nothing: the same board comes back
            played = (*moves, ("model", p.cell)) if p.valid and p.cell is not None else moves
            yield from _walk(child, mark, played)


def tree_lines(tree: Tree, symbol: str) -> list[Line]:
    """Every line from the starts of `tree` that show the model `symbol`, moving first, then
    second. Raises for a tree with paths cut: its lines would be missing some."""
    out: list[Line] = []
    for first in (True, False):
        for root in tree.roots:
            if root.symbol == symbol and root.model_first == first:
                out += _walk(root.node, "X" if first else "O", ())
    return out


__all__ = ["Line", "tree_lines"]
