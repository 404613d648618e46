import contextlib
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.errors import InvalidBoard
from ttt_lab.game.board import EMPTY, is_terminal, legal_moves, play, side_to_move, validate_board, winner
from ttt_lab.game.solver import table


def reference_winner(board: str) -> str | None:
    """Independent of the code under test: rows, columns and diagonals of a 3x3 grid."""
    g = [list(board[r * 3 : r * 3 + 3]) for r in range(3)]
    lines = [*g, *([g[r][c] for r in range(3)] for c in range(3))]
    lines += [[g[i][i] for i in range(3)], [g[i][2 - i] for i in range(3)]]
    found = {line[0] for line in lines if line[0] != "." and line.count(line[0]) == 3}
    assert len(found) <= 1
    return found.pop() if found else None


@given(st.lists(st.integers(min_value=0, max_value=8), min_size=9, max_size=9))
def test_any_game_ends_within_nine_plies_with_the_right_winner(choices: list[int]) -> None:
    board, plies = EMPTY, 0
    while not is_terminal(board):
        moves = legal_moves(board)
        board = play(board, moves[choices[plies] % len(moves)])
        plies += 1
        assert plies <= 9
    assert winner(board) == reference_winner(board)
    assert legal_moves(board) == ()
    if winner(board) is None:
        assert "." not in board
    else:
        # the winner made the last move
        assert winner(board) != side_to_move(board)


def test_every_valid_board_is_reachable_and_nothing_else() -> None:
    valid = set()
    for cells in itertools.product("XO.", repeat=9):
        board = "".join(cells)
        with contextlib.suppress(InvalidBoard):
            valid.add(validate_board(board))
    assert valid == set(table().boards)


@pytest.mark.parametrize(
    ("board", "words"),
    [
        ("X....", "5 characters"),
        ("X.......O.", "10 characters"),
        ("X...o....", "'o'"),
        ("XX.......", "X has 2 marks and O has 0"),
        ("O........", "X has 0 marks and O has 1"),
        ("XXXOOO...", "both X and O"),
        ("XXX.OO.O.", "X holds a line but O has moved"),
        ("OOOXX.XX.", "O holds a line but X has moved"),
    ],
)
def test_bad_boards_are_named_with_the_problem(board: str, words: str) -> None:
    with pytest.raises(InvalidBoard) as e:
        validate_board(board)
    assert words in str(e.value)
    assert repr(board) in str(e.value)


def test_non_string_board_is_rejected() -> None:
    with pytest.raises(InvalidBoard, match="expected a string"):
        validate_board(123)


def test_illegal_move_is_rejected() -> None:
    with pytest.raises(InvalidBoard, match="not a legal move"):
        play("X........", 0)
    with pytest.raises(InvalidBoard, match="not a legal move"):
        play("XXXOO....", 5)


@given(st.text(alphabet="XO.", min_size=9, max_size=9))
def test_threats_are_the_empty_cells_that_would_complete_a_line(board: str) -> None:
    from ttt_lab.game.board import LINES, threats

    for symbol in "XO":
        completing = {c for c in range(9) if board[c] == "."
                      and any(c in line and all(board[i] == symbol for i in line if i != c) for line in LINES)}
        assert threats(board, symbol) == len(completing)
