from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.game.symmetry import CELL_MAPS, INVERSES, canonical, orbit, transform

from .strategies import reachable_board


def test_the_eight_maps_are_distinct_permutations() -> None:
    assert len(set(CELL_MAPS)) == 8
    assert all(sorted(m) == list(range(9)) for m in CELL_MAPS)
    assert CELL_MAPS[0] == tuple(range(9))


def test_the_maps_form_a_group() -> None:
    maps = set(CELL_MAPS)
    for a in CELL_MAPS:
        for b in CELL_MAPS:
            assert tuple(b[a[c]] for c in range(9)) in maps


def test_rot90_moves_the_top_left_corner_to_the_top_right() -> None:
    assert transform("X........", 1) == "..X......"


@given(reachable_board(), st.integers(0, 7))
def test_inverse_undoes_and_canonical_is_shared_by_the_orbit(board: str, k: int) -> None:
    assert transform(transform(board, k), INVERSES[k]) == board
    assert canonical(transform(board, k)) == canonical(board)
    assert canonical(board) in orbit(board)
