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


class DiskFull(TttLabError, OSError):
    pass


FULL_ERRNOS = (28, 122, 27)
"""ENOSPC, EDQUOT, EFBIG (a file-size limit)."""
FULL_WORDS = ("No space left on device", "StorageFull", "Disk quota exceeded", "File too large",
              "database or disk is full", "PytorchStreamWriter failed writing")
"""How libraries that do not raise OSError say it: safetensors (Rust io::Error), SQLite, torch.save."""


def as_disk_full(e: BaseException) -> DiskFull | None:
    """A write that failed for lack of space, found anywhere in the chain of causes (torch,
    safetensors, SQLite: "database or disk is full"): the one-paragraph error. None otherwise."""
    seen: BaseException | None = e
    while seen is not None:
        said = next((w for w in FULL_WORDS if w in str(seen)), None)
        if (isinstance(seen, OSError) and seen.errno in FULL_ERRNOS) or said:
            where = getattr(seen, "filename", None)
            reason = getattr(seen, "strerror", None) or said
            return DiskFull(
                f"the disk is full{f' writing {where}' if where else ''} ({reason}). What was complete before is "
                "kept: checkpoints are published only once whole and an interrupted save is set aside at the "
                "next start. Free space (or point TTT_LAB_HOME at a larger disk) and run the same command "
                "again: it resumes from the last complete checkpoint.")
        seen = seen.__cause__ or seen.__context__
    return None
