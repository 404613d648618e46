"""The board in 9-character notation: cells 0-8 row-major, 'X', 'O' and '.'; X moves first."""

from __future__ import annotations

from ttt_lab.errors import InvalidBoard

EMPTY = "........."
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),
    (0, 3, 6), (1, 4, 7), (2, 5, 8),
    (0, 4, 8), (2, 4, 6),
)


def winning_lines(board: str, symbol: str) -> list[tuple[int, int, int]]:
    """Every line fully held by `symbol`."""
    return [line for line in LINES if all(board[c] == symbol for c in line)]


def winner(board: str) -> str | None:
    """'X' or 'O' when that side holds a line, else None. Assumes a valid board."""
    for a, b, c in LINES:
        s = board[a]
        if s != "." and s == board[b] == board[c]:
            return s
    return None


def threats(board: str, symbol: str) -> int:
    """Empty cells where `symbol` would complete a line (two threats at once: a fork)."""
    cells = set()
    for line in LINES:
        marks = [board[i] for i in line]
        if marks.count(symbol) == 2 and marks.count(".") == 1:
            cells.add(line[marks.index(".")])
    return len(cells)


def side_to_move(board: str) -> str:
    """X moves first, so X is to move whenever both sides have as many marks."""
    return "X" if board.count("X") == board.count("O") else "O"


def is_terminal(board: str) -> bool:
    return winner(board) is not None or "." not in board


def legal_moves(board: str) -> tuple[int, ...]:
    """The empty cells, or () once the game is over."""
    if winner(board) is not None:
        return ()
    return tuple(i for i, s in enumerate(board) if s == ".")


def play(board: str, cell: int) -> str:
    """The board after the side to move marks `cell`; raises on an illegal move."""
    if cell not in legal_moves(board):
        raise InvalidBoard(board, f"cell {cell!r} is not a legal move here (legal: {legal_moves(board)})")
    return board[:cell] + side_to_move(board) + board[cell + 1 :]


def validate_board(board: object) -> str:
    """Return `board` if it can occur in a game, else raise `InvalidBoard` naming the problem."""
    if not isinstance(board, str):
        raise InvalidBoard(board, f"expected a string, got {type(board).__name__}")
    if len(board) != 9:
        raise InvalidBoard(board, f"it has {len(board)} characters, not 9")
    bad = sorted({s for s in board if s not in "XO."})
    if bad:
        raise InvalidBoard(board, f"it contains {', '.join(map(repr, bad))}; only 'X', 'O' and '.' are allowed")
    nx, no = board.count("X"), board.count("O")
    if not (nx == no or nx == no + 1):
        raise InvalidBoard(board, f"X has {nx} marks and O has {no}; X must have as many as O or one more")
    x_wins, o_wins = bool(winning_lines(board, "X")), bool(winning_lines(board, "O"))
    if x_wins and o_wins:
        raise InvalidBoard(board, "both X and O hold a line")
    if x_wins and nx != no + 1:
        raise InvalidBoard(board, "X holds a line but O has moved since, which play would not allow")
    if o_wins and nx != no:
        raise InvalidBoard(board, "O holds a line but X has moved since, which play would not allow")
    return board
