"""One process at a time opens a database that may still need its schema: two processes starting
on a fresh SQLite file or PostgreSQL database both ran the schema creation and one failed
(Optuna: UniqueViolation on alembic_version, IntegrityError; MLflow: "table ... already exists",
"duplicate column"). SQLite files are guarded by a lock file beside them, PostgreSQL databases by
an advisory lock; once created, opening is cheap and the lock is held only for that moment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

INIT_KEY = 0x7474_6C61_6269_6E69
"""PostgreSQL advisory lock key held while a schema is created or upgraded."""


@contextlib.contextmanager
def one_creator(url: str, engine_kwargs: dict[str, Any] | None = None) -> Iterator[None]:
    """Held while the database at `url` is opened (and so created or migrated)."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            from ttt_lab.locks import file_lock

            with file_lock(Path(f"{os.path.abspath(path)}.init.lock")):
                yield
            return
    elif url.startswith("postgresql"):
        from sqlalchemy import create_engine, text

        engine = create_engine(url, **(engine_kwargs or {}))
        try:
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": INIT_KEY})
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": INIT_KEY})
        finally:
            engine.dispose()
        return
    yield
