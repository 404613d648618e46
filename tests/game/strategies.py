"""Hypothesis strategies for boards and positions."""

from hypothesis import strategies as st

from ttt_lab.game.solver import table


def reachable_state() -> st.SearchStrategy[int]:
    return st.integers(min_value=0, max_value=len(table().boards) - 1)


def reachable_board() -> st.SearchStrategy[str]:
    return reachable_state().map(lambda s: table().boards[s])


def nonterminal_board() -> st.SearchStrategy[str]:
    return reachable_board().filter(lambda b: not table().terminal[table().index[b]])
