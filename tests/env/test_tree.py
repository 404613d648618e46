from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.env.rubric import LOSS, TURN_CAP
from ttt_lab.env.settings import EnvConfig
from ttt_lab.env.tree import play_tree
from ttt_lab.game.board import is_terminal, legal_moves, play
from ttt_lab.game.seeding import mix64
from ttt_lab.players.scripted import minimax_player

from .helpers import FunctionPlayer, first_free

ENV = EnvConfig(think="off", max_model_turns=6)


def hashed_policy(salt: int):
    """A deterministic player that picks a legal cell by hashing the board (a different policy per salt)."""

    def cell(board: str) -> int:
        moves = legal_moves(board)
        return moves[mix64(int.from_bytes(board.encode(), "little") ^ salt) % len(moves)]

    return cell


def count_games(board: str, model_mark: str, policy) -> int:
    """Games of a deterministic policy against every reply, counted by plain recursion on boards."""
    if is_terminal(board):
        return 1
    to_move = "X" if board.count("X") == board.count("O") else "O"
    if to_move == model_mark:
        return count_games(play(board, policy(board)), model_mark, policy)
    return sum(count_games(play(board, c), model_mark, policy) for c in legal_moves(board))


def replies_after(records) -> dict[tuple, set[int]]:
    """For every prefix of moves that ends with a model move, the opponent cells that follow it."""
    out: dict[tuple, set[int]] = defaultdict(set)
    for r in records:
        for i, (by, cell) in enumerate(r.moves):
            if by == "opponent" and i > 0:
                out[(r.model_mark, tuple(r.moves[:i]))].add(cell)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32))
def test_the_tree_holds_every_reply_once(salt: int) -> None:
    policy = hashed_policy(salt)
    records = play_tree(FunctionPlayer(lambda t: f"<move>{policy(t.board)}</move>"), ENV)
    empty = "." * 9
    expected = count_games(empty, "X", policy) + count_games(empty, "O", policy)
    assert len(records) == expected
    assert len({(r.model_mark, tuple(r.moves)) for r in records}) == expected
    for (mark, prefix), cells in replies_after(records).items():
        board = empty
        for _, c in prefix:
            board = play(board, c)
        assert cells == set(legal_moves(board)), (mark, prefix)
    for r in records:  # each game's conversation is its own (branches copy, never share, the messages)
        said = [m["content"] for m in r.messages if m["role"] == "assistant"]
        assert said == [f"<move>{c}</move>" for by, c in r.moves if by == "model"]
    openings = {r.moves[0][1] for r in records if r.model_mark == "O"}
    assert openings == set(range(9))


def test_a_never_losing_teacher_loses_no_line_and_a_careless_player_does() -> None:
    teacher = play_tree(minimax_player(scoring="exploit", think=False), ENV)
    assert teacher and not [r for r in teacher if r.outcome == LOSS]
    careless = play_tree(FunctionPlayer(first_free), ENV)
    assert Counter(r.outcome for r in careless)[LOSS] > 0


def test_one_side_only_and_the_seed_reaches_the_examples() -> None:
    first = play_tree(minimax_player(think=False), ENV, sides=(True,), seed=7)
    assert {r.model_mark for r in first} == {"X"}
    assert {r.example.seed for r in first} == {7}
    a = play_tree(minimax_player(think=False), ENV, seed=1)
    b = play_tree(minimax_player(think=False), ENV, seed=2)
    assert [r.moves for r in a] != [r.moves for r in b]  # the teacher's tie-breaks follow the seed


def test_an_invalid_reply_gets_feedback_and_does_not_branch() -> None:
    records = play_tree(FunctionPlayer(lambda t: "no move"), ENV, sides=(True,))
    assert len(records) == 1
    assert records[0].outcome == TURN_CAP and records[0].invalid_moves == ENV.max_model_turns
