"""The lines read off an every-reply tree are the games `play_tree` plays, one for one."""

import pytest

from ttt_lab.env.episode import Turn
from ttt_lab.env.exact import expand_tree
from ttt_lab.env.lines import tree_lines
from ttt_lab.env.settings import EnvConfig
from ttt_lab.env.tree import play_tree
from ttt_lab.players.distributions import GreedyDistribution, ScriptedDistribution
from ttt_lab.players.scripted import minimax_player

from .helpers import FunctionPlayer, first_free

ENV = EnvConfig(think="off", max_model_turns=6)
STARTS = [(True, "X", 0.25), (False, "X", 0.25), (True, "O", 0.25), (False, "O", 0.25)]


def centre_on_third_move(turn: Turn) -> str:
    """The first free cell, except the centre once two marks are down: occupied in some lines,
    where it is written again and again until the turn cap."""
    return "<move>4</move>" if turn.board.count(".") == 7 else first_free(turn)


def as_lines(games) -> list[tuple]:
    return sorted((g.model_mark, tuple(g.moves), g.outcome, g.invalid_moves) for g in games)


@pytest.mark.parametrize("name", ["minimax-first", "first-free", "centre-on-third"])
@pytest.mark.parametrize("symbol", ["X", "O"])
def test_the_trees_lines_are_the_games_play_tree_plays(name: str, symbol: str) -> None:
    if name == "minimax-first":
        player = minimax_player("first", think=False)
        policy = ScriptedDistribution(player)  # markov: the tree is a graph, its paths still the games
    else:
        player = FunctionPlayer(first_free if name == "first-free" else centre_on_third_move)
        policy = GreedyDistribution(player)
    tree = expand_tree(policy, ENV, STARTS)
    lines, games = tree_lines(tree, symbol), play_tree(player, ENV, model_symbol=symbol)
    assert len(lines) == len(games) > 100
    assert as_lines(lines) == as_lines(games)
    assert {line.outcome for line in lines} >= ({"draw"} if name == "minimax-first" else {"win", "loss"})
    if name == "centre-on-third":
        assert any(line.invalid_moves for line in lines) and not all(line.invalid_moves for line in lines)


def test_a_cut_tree_has_no_lines_to_give() -> None:
    policy = GreedyDistribution(FunctionPlayer(first_free))
    random_reply = lambda state: {c: 1 / 9 for c in range(9)}  # noqa: E731
    tree = expand_tree(policy, ENV, STARTS, min_prob=0.01, opponent_bound=random_reply)
    with pytest.raises(ValueError, match="cut"):
        tree_lines(tree, "X")
