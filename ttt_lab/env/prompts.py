"""What the model reads: the system prompt and one user message per turn.

The model is always *shown* the symbol of its example (`shown`), whatever side it plays
in the game core (where X always moves first): rendering swaps X and O when the two
differ. Rendered texts depend only on their arguments and are cached.
"""

from __future__ import annotations

from functools import lru_cache

_SWAP = str.maketrans("XO", "OX")

_THINK_INSTRUCTIONS = {
    "required": "first reason step by step inside <think>...</think>, then give",
    "optional": "you may reason inside <think>...</think> first; then give",
    "off": "give only",
}


def other(symbol: str) -> str:
    return "O" if symbol == "X" else "X"


@lru_cache(maxsize=16)
def system_prompt(shown: str, think: str) -> str:
    return (
        f"You are playing tic-tac-toe as {shown}; your opponent plays {other(shown)}. "
        "The cells are numbered 0 to 8, row by row:\n"
        "0 | 1 | 2\n3 | 4 | 5\n6 | 7 | 8\n"
        "Three marks in a row, column or diagonal win. "
        f"On your turn, {_THINK_INSTRUCTIONS[think]} your move as <move>N</move>, "
        "where N is the number of an empty cell."
    )


def display_board(board: str, model_mark: str, shown: str) -> str:
    """The core board with the model's marks written as `shown`."""
    return board if model_mark == shown else board.translate(_SWAP)


@lru_cache(maxsize=65536)
def render_grid(display: str) -> str:
    """A 3x3 grid; empty cells show their number so the model can read the options off it."""
    cells = [s if s != "." else str(i) for i, s in enumerate(display)]
    return "\n".join(" | ".join(cells[r : r + 3]) for r in (0, 3, 6))


@lru_cache(maxsize=131072)
def turn_message(display: str, status: str) -> str:
    """One user message: status line, board, available positions, and the call to move."""
    free = ", ".join(str(i) for i, s in enumerate(display) if s == ".")
    return f"{status}\n\n{render_grid(display)}\n\nAvailable positions: {free}\nYour turn."


def opening_status(shown: str, opponent_cell: int | None) -> str:
    if opponent_cell is None:
        return f"New game. You play {shown} and move first."
    return f"New game. You play {shown}. Your opponent ({other(shown)}) moved first and played {opponent_cell}."


@lru_cache(maxsize=32)
def opponent_status(shown: str, cell: int) -> str:
    return f"Your opponent ({other(shown)}) played {cell}."

