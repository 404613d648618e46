"""Errors users can act on: each names what is wrong, the value, and what is allowed."""

from __future__ import annotations

from typing import Any


class TttLabError(Exception):
    """Base class for errors that the CLI reports as one paragraph, without a traceback."""


class InvalidSetting(TttLabError, ValueError):
    """A configuration value is outside what is allowed.

    The message always names the field, the value that was given and what is allowed,
    so it can be fixed without reading the code.
    """

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"invalid value for '{field}': {value!r}. Allowed: {allowed}.")


class InvalidBoard(TttLabError, ValueError):
    """A board string is malformed or describes a position that cannot occur."""

    def __init__(self, board: Any, problem: str) -> None:
        self.board = board
        self.problem = problem
        super().__init__(
            f"invalid board {board!r}: {problem}. A board is 9 characters of 'X', 'O' and '.', "
            "cells 0-8 row by row, X moves first (so X has as many marks as O or one more), "
            "and play stops at the first win."
        )
