"""A check that a SQLite store (MLflow's mlflow.db, Optuna's optuna.db) is a readable
database before a library opens it: a damaged file is one clear error naming it, not
SQLAlchemy's traceback, and nothing is written to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ttt_lab.errors import TttLabError


class CorruptStoreError(TttLabError):
    pass


def check_sqlite_file(path: str | Path, what: str) -> None:
    """Raise CorruptStoreError when `path` exists and is not a readable SQLite database.
    Read-only: the file is opened with mode=ro, and only its schema and header are read
    (`PRAGMA quick_check` reads every page: too slow for a large store at every start)."""
    p = Path(path)
    if not p.is_file() or p.stat().st_size == 0:
        return
    try:
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            con.execute("PRAGMA schema_version").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        if "locked" in str(e):
            return  # busy, not broken: the library's own timeout deals with it
        raise CorruptStoreError(
            f"the {what} {p} is not a readable SQLite database ({e}). Nothing was written to it. Move it aside "
            f"(`mv {p} {p}.corrupt`) to start a new one, or restore it from a backup; `sqlite3 {p} .recover` "
            "may save what it holds.") from None


DAMAGED = ("database disk image is malformed", "file is not a database", "file is encrypted or is not a database")


def as_store_error(e: BaseException) -> CorruptStoreError | None:
    """SQLite's own word that a file is damaged, found in an exception raised through MLflow,
    Optuna or SQLAlchemy (a damaged page past the header shows only when it is read): the
    one-paragraph error. None for anything else."""
    text = str(e)
    if not any(d in text for d in DAMAGED):
        return None
    reason = next(d for d in DAMAGED if d in text)
    return CorruptStoreError(
        f"a SQLite store is damaged ({reason}); the command stopped at the read that found it. Find which with "
        "`sqlite3 FILE 'PRAGMA integrity_check'` on the home's mlflow.db and optuna.db (or the file of "
        "tracking.uri / --storage), then move it aside to start a new one or restore it from a backup; "
        "`sqlite3 FILE .recover` may save what it holds.")
