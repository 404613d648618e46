from functools import cache

import pytest
from hypothesis import given

from ttt_lab.errors import InvalidBoard
from ttt_lab.game import fastest_moves, optimal_moves, value
from ttt_lab.game.board import EMPTY, legal_moves, play, side_to_move, winner
from ttt_lab.game.solver import NO_CHILD, exploiting_moves, table
from ttt_lab.game.symmetry import map_cell, transform

from .strategies import nonterminal_board, reachable_board


@cache
def naive_value(board: str) -> int:
    """Plain recursive minimax, independent of the solver's table."""
    w = winner(board)
    if w is not None:
        return 1 if w == "X" else -1
    moves = legal_moves(board)
    if not moves:
        return 0
    vals = [naive_value(play(board, m)) for m in moves]
    return max(vals) if side_to_move(board) == "X" else min(vals)


@cache
def naive_win_chance(board: str, me: str) -> float:
    """Chance that `me` wins from `board` playing the best optimal move against a uniformly random
    opponent (plain recursion on boards with floats; only the value-keeping moves come from the solver,
    not the exploiting pass under test)."""
    w = winner(board)
    if w is not None or not legal_moves(board):
        return float(w == me)
    children = [naive_win_chance(play(board, m), me) for m in legal_moves(board)]
    if side_to_move(board) != me:
        return sum(children) / len(children)
    opt = optimal_moves(board)
    return max(c for m, c in zip(legal_moves(board), children, strict=True) if m in opt)


def test_known_counts_of_tic_tac_toe() -> None:
    t = table()
    assert len(t.boards) == 5478
    assert sum(t.terminal) == 958
    paths = [0] * len(t.boards)
    paths[0] = 1
    games = {"X": 0, "O": 0, None: 0}
    for s in range(len(t.boards)):
        if t.terminal[s]:
            games[t.winner[s]] += paths[s]
        for child in t.children[s]:
            if child != NO_CHILD:
                paths[child] += paths[s]
    assert sum(games.values()) == 255_168
    assert games == {"X": 131_184, "O": 77_904, None: 46_080}


def test_empty_board_is_a_draw_and_every_first_move_keeps_it() -> None:
    assert value(EMPTY) == 0
    assert optimal_moves(EMPTY) == frozenset(range(9))
    assert value("X........") == 0


def test_solver_agrees_with_plain_minimax_everywhere() -> None:
    t = table()
    assert all(t.value[s] == naive_value(b) for s, b in enumerate(t.boards))


@given(nonterminal_board())
def test_optimal_moves_keep_the_value_and_the_rest_lose_it(board: str) -> None:
    opt = optimal_moves(board)
    assert opt
    v = value(board)
    sign = 1 if side_to_move(board) == "X" else -1
    for m in legal_moves(board):
        child = value(play(board, m))
        if m in opt:
            assert child == v
        else:
            assert sign * child < sign * v
    assert fastest_moves(board) <= opt
    assert fastest_moves(board)


@cache
def naive_score(board: str) -> int:
    """Independent fast scoring: +/-(10 - marks) at the end, so quicker wins score higher."""
    w = winner(board)
    marks = 9 - board.count(".")
    if w is not None:
        return (10 - marks) * (1 if w == "X" else -1)
    moves = legal_moves(board)
    if not moves:
        return 0
    vals = [naive_score(play(board, m)) for m in moves]
    return max(vals) if side_to_move(board) == "X" else min(vals)


def test_fast_scoring_agrees_with_plain_minimax_on_plies() -> None:
    t = table()
    for s, board in enumerate(t.boards):
        if t.terminal[s]:
            continue
        scores = {m: naive_score(play(board, m)) for m in legal_moves(board)}
        best = (max if side_to_move(board) == "X" else min)(scores.values())
        assert set(t.fastest[s]) == {m for m, v in scores.items() if v == best}


def test_fast_scoring_takes_the_quick_win_and_delays_the_loss() -> None:
    assert fastest_moves("XOOX.....") == {6} < optimal_moves("XOOX.....")  # X wins at once
    assert fastest_moves("XO..X....") == {8}  # O is lost, but blocking the diagonal delays it
    assert len(optimal_moves("XO..X....")) == 6


@given(reachable_board())
def test_results_are_invariant_under_the_eight_symmetries(board: str) -> None:
    for k in range(8):
        image = transform(board, k)
        assert value(image) == value(board)
        assert optimal_moves(image) == {map_cell(m, k) for m in optimal_moves(board)}
        assert fastest_moves(image) == {map_cell(m, k) for m in fastest_moves(board)}


def test_unreachable_board_is_explained() -> None:
    with pytest.raises(InvalidBoard, match="X has 3 marks and O has 0"):
        value("XXX......")
    with pytest.raises(InvalidBoard, match="9 characters"):
        optimal_moves("")


def test_exploiting_moves_are_the_optimal_ones_that_beat_random_play_most_often() -> None:
    t = table()
    for board in t.boards[:: 7]:
        if not legal_moves(board):
            continue
        me = side_to_move(board)
        chances = {m: naive_win_chance(play(board, m), me) for m in optimal_moves(board)}
        best = max(chances.values())
        assert exploiting_moves(board) == {m for m, c in chances.items() if c > best - 1e-9}, board


def test_never_losing_play_wins_87_percent_against_random_and_exploiting_play_96() -> None:
    """The two numbers the learning goals are measured against: perfect play choosing uniformly among
    the value-keeping moves, and perfect play choosing the moves that beat random play most often
    (half of the games moving first)."""

    def uniform(board: str, me: str) -> float:
        w = winner(board)
        if w is not None or not legal_moves(board):
            return float(w == me)
        moves = legal_moves(board) if side_to_move(board) != me else sorted(optimal_moves(board))
        return sum(uniform(play(board, m), me) for m in moves) / len(moves)

    assert (uniform(EMPTY, "X") + uniform(EMPTY, "O")) / 2 == pytest.approx(0.8726, abs=1e-4)
    assert (naive_win_chance(EMPTY, "X") + naive_win_chance(EMPTY, "O")) / 2 == pytest.approx(0.9556, abs=1e-4)


def test_exploiting_play_takes_the_corner_and_answers_a_corner_with_the_centre() -> None:
    assert exploiting_moves(EMPTY) == {0, 2, 6, 8}
    assert exploiting_moves("X........") == {4}


@given(reachable_board())
def test_exploiting_moves_are_optimal_and_symmetric(board: str) -> None:
    ex = exploiting_moves(board)
    assert ex <= optimal_moves(board) and (bool(ex) == bool(legal_moves(board)) or winner(board))
    for k in range(8):
        assert exploiting_moves(transform(board, k)) == {map_cell(m, k) for m in ex}
