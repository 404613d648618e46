"""One mutex per study across every process and machine that shares its storage, held while a
process reads the trials and then adds to them: recovering dead trials, enqueueing grid points
and retries, counting and asking for a search trial. Without it two machines reading at once
both enqueue the same grid point (a duplicated data point in the report) or both take the last
trial of a search (one too many).

SQLite (one machine): an exclusive file lock beside the database. PostgreSQL: a session-level
advisory lock, which the server releases if the process dies. A journal file: an exclusive file
lock beside it (flock: the shared file system must support it, as NFSv4 and Lustre or GPFS
mounted with flock do; the lock goes with its process). Other databases: no mutex."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ttt_lab.locks import file_lock

WAIT_S = 600
"""The mutex is held for seconds (reading and adding trials); a wait this long means its holder hangs."""


def advisory_key(study_name: str) -> int:
    """A signed 64-bit key (PostgreSQL's advisory lock space) for this study."""
    return int.from_bytes(hashlib.sha256(f"ttt-lab study {study_name}".encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def study_mutex(storage, url: str, study_name: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            with file_lock(Path(f"{path}.lock"), on_wait, timeout_s=WAIT_S):
                yield
            return
    elif url.startswith("postgresql"):
        with _advisory_lock(storage.engine, advisory_key(study_name), on_wait):
            yield
        return
    elif url.startswith("journal:"):
        from ttt_lab.studies.storage import journal_path

        with file_lock(Path(f"{journal_path(url)}.mutex"), on_wait, timeout_s=WAIT_S):
            yield
        return
    yield


@contextlib.contextmanager
def _advisory_lock(engine, key: int, on_wait: Callable[[], None] | None) -> Iterator[None]:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from ttt_lab.studies.spec import StudyError

    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if not conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
            if on_wait is not None:
                on_wait()
            conn.execute(text(f"SET lock_timeout = '{WAIT_S}s'"))
            try:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            except OperationalError:
                raise StudyError(f"waited {WAIT_S} s for the study's lock in PostgreSQL, held by "
                                 f"{_pg_holder(conn, key)}. If that worker hangs, stop it and run again.") from None
            conn.execute(text("SET lock_timeout = 0"))
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})


def _pg_holder(conn, key: int) -> str:
    """The client holding advisory lock `key` (its address, pid and application)."""
    from sqlalchemy import text

    row = conn.execute(text(
        "SELECT a.client_addr, a.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :hi AND l.objid = :lo"),
        {"hi": (key >> 32) & 0xFFFFFFFF, "lo": key & 0xFFFFFFFF}).first()
    return f"backend pid {row[1]} of client {row[0] or 'local'} ({row[2] or 'no name'})" if row else "another session"
