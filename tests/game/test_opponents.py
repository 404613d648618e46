from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.errors import InvalidSetting
from ttt_lab.game import optimal_moves, value
from ttt_lab.game.board import legal_moves, play, side_to_move, winner
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent
from ttt_lab.game.seeding import PLAYER_STREAM
from ttt_lab.game.solver import table

from .strategies import nonterminal_board

SEEDS = range(300)


def multi_choice_states() -> list[int]:
    t = table()
    return [s for s in range(len(t.boards)) if len(t.optimal[s]) >= 2]


def test_random_tie_break_covers_every_optimal_move() -> None:
    opp = MinimaxOpponent(tie_break="random")
    t = table()
    for s in multi_choice_states():
        picks = {opp.reply(t.boards[s], seed) for seed in SEEDS}
        assert picks == set(t.optimal[s]), t.boards[s]


@pytest.mark.parametrize(("tie_break", "pick"), [("first", min), ("last", max)])
def test_first_and_last_tie_breaks_never_cover_two_options(tie_break: str, pick) -> None:
    opp = MinimaxOpponent(tie_break=tie_break)
    t = table()
    for s in multi_choice_states()[::7]:
        picks = {opp.reply(t.boards[s], seed) for seed in range(20)}
        assert picks == {pick(t.optimal[s])}


@given(nonterminal_board(), st.integers(), st.sampled_from(["random", "first", "last"]),
       st.sampled_from(["value", "fast"]), st.booleans())
def test_minimax_never_does_worse_than_the_value(board: str, seed: int, tie_break: str, scoring: str,
                                                 minimax_is_x: bool) -> None:
    mm = MinimaxOpponent(tie_break=tie_break, scoring=scoring)
    rnd = RandomOpponent(stream=PLAYER_STREAM)
    v, b = value(board), board
    while legal_moves(b):
        mover = mm if (side_to_move(b) == "X") == minimax_is_x else rnd
        b = play(b, mover.reply(b, seed))
    w = winner(b)
    result = 1 if w == "X" else -1 if w == "O" else 0
    assert result >= v if minimax_is_x else result <= v


@given(nonterminal_board(), st.integers(min_value=-(2**70), max_value=2**70))
def test_replies_are_legal_and_a_pure_function_of_seed_and_position(board: str, seed: int) -> None:
    for opp in (RandomOpponent(), MinimaxOpponent(p_random=0.5), MinimaxOpponent(tie_break="first")):
        move = opp.reply(board, seed)
        assert move in legal_moves(board)
        assert opp.reply(board, seed) == move
        assert type(opp)(**_kwargs(opp)).reply(board, seed) == move


def _kwargs(opp) -> dict:
    if isinstance(opp, MinimaxOpponent):
        return {"tie_break": opp.tie_break, "scoring": opp.scoring, "p_random": opp.p_random}
    return {}


def test_p_random_share_of_non_optimal_moves_is_calibrated() -> None:
    # On the empty board every move is optimal, so look at a position with one optimal move.
    board = "XX.OO...."  # X to move must win at 2
    assert optimal_moves(board) == {2}
    for p in (0.0, 0.25, 1.0):
        opp = MinimaxOpponent(p_random=p)
        counts = Counter(opp.reply(board, seed) for seed in range(4000))
        off = 1 - counts[2] / 4000
        expected = p * 4 / 5  # a random move hits the optimal cell 1 time in 5
        assert abs(off - expected) < 0.03, (p, off)


def test_random_opponent_is_uniform_over_legal_moves() -> None:
    opp = RandomOpponent()
    counts = Counter(opp.reply("X........", seed) for seed in range(8000))
    assert set(counts) == set(range(1, 9))
    assert max(counts.values()) - min(counts.values()) < 200


def test_same_position_different_seeds_differ_where_there_is_a_choice() -> None:
    opp = MinimaxOpponent()
    assert len({opp.reply(".........", s) for s in range(50)}) > 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tie_break": "middle"}, "tie_break"),
        ({"scoring": "slow"}, "scoring"),
        ({"p_random": 1.5}, "p_random"),
        ({"p_random": -0.1}, "p_random"),
        ({"p_random": "0.3"}, "p_random"),
    ],
)
def test_bad_opponent_settings_name_field_value_and_allowed(kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidSetting) as e:
        MinimaxOpponent(**kwargs)
    assert e.value.field == field
    assert repr(next(iter(kwargs.values()))) in str(e.value)
    assert "Allowed:" in str(e.value)


def test_reply_on_a_finished_game_is_refused() -> None:
    with pytest.raises(ValueError, match="over"):
        MinimaxOpponent().reply("XXXOO....", 0)
