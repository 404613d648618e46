"""The 8 symmetries of the board (rotations and reflections) as maps of cell indices."""

from __future__ import annotations

from collections.abc import Callable


def _cell_map(f: Callable[[int, int], tuple[int, int]]) -> tuple[int, ...]:
    out = []
    for cell in range(9):
        r, c = f(*divmod(cell, 3))
        out.append(3 * r + c)
    return tuple(out)


NAMES: tuple[str, ...] = (
    "identity", "rot90", "rot180", "rot270", "flip_lr", "flip_ud", "transpose", "anti_transpose",
)
CELL_MAPS: tuple[tuple[int, ...], ...] = (
    _cell_map(lambda r, c: (r, c)),
    _cell_map(lambda r, c: (c, 2 - r)),
    _cell_map(lambda r, c: (2 - r, 2 - c)),
    _cell_map(lambda r, c: (2 - c, r)),
    _cell_map(lambda r, c: (r, 2 - c)),
    _cell_map(lambda r, c: (2 - r, c)),
    _cell_map(lambda r, c: (c, r)),
    _cell_map(lambda r, c: (2 - c, 2 - r)),
)
"""`CELL_MAPS[k][cell]` is where `cell` lands under symmetry k."""

INVERSES: tuple[int, ...] = tuple(
    next(j for j, m2 in enumerate(CELL_MAPS) if all(m2[m[c]] == c for c in range(9)))
    for m in CELL_MAPS
)
"""`INVERSES[k]` is the symmetry that undoes symmetry k."""


def map_cell(cell: int, k: int) -> int:
    return CELL_MAPS[k][cell]


def transform(board: str, k: int) -> str:
    """The board as seen after applying symmetry k to every cell."""
    m = CELL_MAPS[k]
    out = ["."] * 9
    for cell, s in enumerate(board):
        out[m[cell]] = s
    return "".join(out)


def orbit(board: str) -> tuple[str, ...]:
    """The 8 images of `board`, in the order of `CELL_MAPS` (duplicates kept)."""
    return tuple(transform(board, k) for k in range(8))


def canonical(board: str) -> str:
    """The smallest image of `board` under the symmetries: one name per equivalence class."""
    return min(orbit(board))
