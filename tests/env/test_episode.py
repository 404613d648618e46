import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.env.episode import Episode
from ttt_lab.env.parser import NO_TAG, OCCUPIED
from ttt_lab.env.rubric import DRAW, FORFEIT, LOSS, TURN_CAP, WIN
from ttt_lab.env.settings import EnvConfig, PenaltyConfig
from ttt_lab.game.board import play
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent

from .helpers import example, first_free, optimal_first


def run(ep: Episode, replies) -> Episode:
    for r in replies:
        if ep.done:
            break
        ep.step(r if isinstance(r, str) else r(ep))
    return ep


def test_opponent_first_and_symbol_shown_as_x() -> None:
    ep = Episode(example(model_first=False, symbol="X"), EnvConfig(), MinimaxOpponent(tie_break="first"))
    assert ep.model_mark == "O"
    assert ep.board == "X........"  # core: the opponent is X
    first_user = ep.messages[1]["content"]
    assert "Your opponent (O) moved first and played 0" in first_user
    assert first_user.splitlines()[2].startswith("O | 1 | 2")  # shown as O: the opponent's mark
    assert "Available positions: 1, 2, 3, 4, 5, 6, 7, 8" in first_user
    assert ep.messages[0]["role"] == "system" and "as X" in ep.messages[0]["content"]


def test_model_shown_as_o_while_moving_first() -> None:
    ep = Episode(example(model_first=True, symbol="O"), EnvConfig(), MinimaxOpponent(tie_break="first"))
    ep.step("<move>4</move>")
    grid = ep.messages[-1]["content"].split("\n\n")[1]
    assert ep.board[4] == "X"
    assert grid.splitlines()[1] == "3 | O | 5"
    assert "Your opponent (X) played" in ep.messages[-1]["content"]


def test_invalid_move_retries_on_the_same_board_with_feedback() -> None:
    ep = Episode(example(), EnvConfig(), MinimaxOpponent())
    ep.step("no idea")
    assert ep.board == "........."
    assert ep.messages[-1]["content"].startswith("Invalid move: no <move>N</move> tag")
    ep.step("<move>4</move>")
    assert ep.board.count(".") == 7
    assert ep.invalid == 1 and ep.invalid_kinds == {NO_TAG: 1}


def test_occupied_cell_is_invalid() -> None:
    ep = Episode(example(model_first=False), EnvConfig(), MinimaxOpponent(tie_break="first"))
    ep.step("<move>0</move>")
    assert ep.invalid_kinds == {OCCUPIED: 1}
    assert "cell 0 is already taken" in ep.messages[-1]["content"]


@pytest.mark.parametrize("cap", [1, 2, 5])
def test_turn_cap_counts_every_message(cap: int) -> None:
    ep = run(Episode(example(), EnvConfig(max_model_turns=cap), MinimaxOpponent()), ["bad"] * 20)
    assert ep.outcome == TURN_CAP
    assert ep.model_turns == cap
    assert sum(m["role"] == "assistant" for m in ep.messages) == cap
    assert ep.messages[-1]["role"] == "assistant"
    assert ep.record().rewards.outcome == 0.0


def test_the_last_allowed_message_is_still_processed() -> None:
    # X: 0, 1 with O blocked elsewhere; the third model message (the cap) wins.
    opp = MinimaxOpponent(p_random=1.0)  # random replies; find a seed where 0,1,2 stays open
    for seed in range(200):
        ep = Episode(example(seed=seed, p=1.0), EnvConfig(max_model_turns=3), opp)
        run(ep, ["<move>0</move>", "<move>1</move>"])
        if not ep.done and ep.board[2] == "." and ep.board.count("O") == 2:
            ep.step("<move>2</move>")
            assert ep.outcome == WIN and ep.model_turns == 3
            return
    pytest.fail("no seed left row 0-1-2 open")


def test_cap_reached_by_a_valid_non_final_move_is_a_turn_cap() -> None:
    ep = run(Episode(example(), EnvConfig(max_model_turns=1), MinimaxOpponent()), ["<move>4</move>"])
    assert ep.outcome == TURN_CAP
    assert [by for by, _ in ep.moves] == ["model", "opponent"]


def test_forfeit_mode_loses_on_first_invalid_move() -> None:
    env = EnvConfig(penalty=PenaltyConfig(mode="forfeit"))
    ep = run(Episode(example(), env, MinimaxOpponent()), ["<move>4</move>", "<move>4</move>"])
    assert ep.outcome == FORFEIT
    r = ep.record().rewards
    assert r.outcome == 0.0 and r.invalid == 0.0


@pytest.mark.parametrize(("mode", "n_invalid", "expected"),
                         [("flat", 1, -0.1), ("flat", 3, -0.1), ("per_move", 3, -0.3), ("per_move", 8, -0.5)])
def test_penalty_modes(mode: str, n_invalid: int, expected: float) -> None:
    env = EnvConfig(max_model_turns=20, penalty=PenaltyConfig(mode=mode, amount=0.1, cap=0.5))
    ep = run(Episode(example(), env, MinimaxOpponent()), ["bad"] * n_invalid + [optimal_first] * 10)
    assert ep.invalid == n_invalid
    assert ep.record().rewards.invalid == pytest.approx(expected)


def test_rewards_total_is_the_weighted_sum() -> None:
    env = EnvConfig()
    ep = run(Episode(example(), env, MinimaxOpponent()), ["bad", *([optimal_first] * 9)])
    rec = ep.record()
    assert rec.outcome == DRAW
    r = rec.rewards
    assert r.format == pytest.approx((rec.model_turns - 1) / rec.model_turns)
    assert r.total == pytest.approx(0.5 + 0.2 * r.format - 0.1)


@given(st.integers(), st.floats(0, 1), st.booleans(), st.sampled_from("XO"))
def test_optimal_model_never_loses_and_messages_alternate(seed: int, p: float, first: bool, sym: str) -> None:
    ep = run(Episode(example(seed, p, first, sym), EnvConfig(), MinimaxOpponent(p_random=p)), [optimal_first] * 9)
    rec = ep.record()
    assert rec.outcome in (WIN, DRAW)
    roles = [m["role"] for m in rec.messages]
    assert roles[0] == "system"
    assert roles[1:] == ["user", "assistant"] * rec.model_turns
    board = "........."
    for _, cell in rec.moves:
        board = play(board, cell)
    assert board == rec.final_board


@given(st.integers(), st.booleans())
def test_weak_model_loses_to_perfect_opponent_sometimes_never_wins(seed: int, first: bool) -> None:
    ep = run(Episode(example(seed, 0.0, first), EnvConfig(), MinimaxOpponent()), [first_free] * 9)
    assert ep.outcome in (LOSS, DRAW)


def test_user_defined_opponent_through_the_protocol() -> None:
    class Corner:
        def reply(self, board: str, seed: int) -> int:
            return next(c for c in (0, 2, 6, 8, 1, 3, 5, 7, 4) if board[c] == ".")

    ep = run(Episode(example(model_first=False), EnvConfig(), Corner()), [first_free] * 9)
    assert ep.moves[0] == ("opponent", 0)

    class Cheater:
        def reply(self, board: str, seed: int) -> int:
            return 0

    ep = Episode(example(model_first=True), EnvConfig(), Cheater())
    with pytest.raises(ValueError, match="illegal cell 0"):
        ep.step("<move>0</move>")


def test_step_after_the_end_and_record_before_it_are_refused() -> None:
    ep = Episode(example(), EnvConfig(max_model_turns=1), RandomOpponent())
    with pytest.raises(RuntimeError, match="not over"):
        ep.record()
    ep.step("x")
    with pytest.raises(RuntimeError, match="over"):
        ep.step("x")
