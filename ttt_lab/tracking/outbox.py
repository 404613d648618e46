"""What a run sends to a tracking *server*, kept in order until the server has it.

A training outlives a tracking server that is restarted or drops for a while: a send that
fails because the server cannot be reached is kept (with everything after it, in order) and
retried at the next send, at most every RETRY_EVERY_S; the run goes on and says so once.

What is kept is on disk from the moment it is kept: the first failed send opens a journal,
`<home>/tracking-fallback/<run id>.jsonl`, and every op queued after it is appended there
(one JSON line each, flushed and fsync'd before `put` returns), so a SIGKILL (the OOM killer, a
preempted job) loses nothing that was logged. Delivered ops are acknowledged in the same file;
once everything is delivered the journal is removed. The run holds an exclusive `flock` on its
journal while it lives, so `ttt-lab runs sync` replays the journals of runs that ended or died
and leaves a live run's to the run itself. MLflow's stores keep one copy of a metric logged
twice with the same key, value, step and timestamp, and params, tags, texts and statuses are
written by value, so an op sent again after a kill between its delivery and its acknowledgement
changes nothing on the server.

At the end of the run the outbox waits up to END_WAIT_S for the server; if it is still gone the
journal stays for `ttt-lab runs sync`. Local stores (SQLite) are not servers: their errors are
real errors and are raised at once. An error of a server that *answers* (a refused request: a
400 for a bad metric name) is not an outage either: the op is dropped from the queue and the
error raised, so it cannot hold back what follows it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ttt_lab import log
from ttt_lab.errors import TttLabError

LOG = log.get("tracking")
"""Where the outage is said: a warning when the server goes, a line when it is back."""
RETRY_EVERY_S = 10.0
END_WAIT_S = 60.0
FALLBACK = "tracking-fallback"
JOURNAL_SUFFIX = ".jsonl"
TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses of a server that is down, overloaded or restarting behind a proxy: retried later
(MLflow's own client retries the same set)."""


def _connection_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean no answer came from the server: refused, reset, timed out, no
    route, name not resolved, or retries used up on transient statuses."""
    import requests
    import urllib3

    return (ConnectionError, TimeoutError, socket.gaierror, socket.herror, requests.ConnectionError,
            requests.Timeout, requests.exceptions.RetryError, requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.MaxRetryError, urllib3.exceptions.ProtocolError, urllib3.exceptions.NewConnectionError,
            urllib3.exceptions.TimeoutError)


def _chain(e: BaseException | None) -> list[BaseException]:
    """`e` and its causes: MLflow raises its own exception inside `except` (the request's error
    is its `__context__`) or `from` it (`__cause__`)."""
    seen: list[BaseException] = []
    while e is not None and all(e is not s for s in seen):
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen


def http_status(e: BaseException) -> int | None:
    """The HTTP status an MLflow error stands for (from its error code), None for other errors."""
    from mlflow.exceptions import MlflowException

    if isinstance(e, MlflowException):
        try:
            return int(e.get_http_status_code())
        except (TypeError, ValueError):
            return None
    return None


def is_outage(e: BaseException) -> bool:
    """A server that cannot be reached or is failing, by exception type: a connection error or
    timeout anywhere in the chain, or an MLflow error that stands for a transient HTTP status.
    A refused request (4xx: a bad metric name, a param changed) is not an outage."""
    errors = _connection_errors()
    for link in _chain(e):
        if isinstance(link, errors):
            return True
    return http_status(e) in TRANSIENT_HTTP


@dataclass
class Op:
    """One send: `kind` is metrics, params, tags, text, artifact or status."""

    kind: str
    data: Any
    extra: str | None = None


@dataclass
class Queued:
    seq: int
    op: Op
    journaled: bool = False


class JournalBusy(Exception):
    """Another live process holds the journal (its run is still going and sends its own)."""


class JournalDamaged(TttLabError):
    pass


@dataclass
class Contents:
    run_id: str
    unacked: list[Queued]
    """Ops not yet delivered, in the order they were queued."""
    next_seq: int
    """The first sequence number no line of the file uses."""


def _locked(path: Path, create: bool) -> IO[str]:
    """`path` open for appending with an exclusive `flock`; `JournalBusy` if a live process holds
    it. Without `create`, a file removed meanwhile (its run delivered everything) is not made again."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    f = os.fdopen(os.open(path, flags, 0o666), "a", encoding="utf-8")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise JournalBusy(f"{path} is held by a process of its run that is still going") from None
    return f


class Journal:
    """An append-only file of queued ops and acknowledgements, locked by the process that writes it.

    Lines: `{"run_id": ...}` first, then `{"seq": n, "kind": ..., "data": ..., "extra": ...}` per
    op and `{"ack": n}` once op n was delivered. Op lines are fsync'd before `append` returns;
    an acknowledgement only needs to reach the kernel (a lost one resends an op, which the
    server keeps once)."""

    def __init__(self, path: Path, f: IO[str]) -> None:
        self.path, self._f = path, f

    @classmethod
    def create(cls, path: Path, run_id: str) -> tuple[Journal, Contents]:
        """The journal of `run_id`, and what an earlier process of the run (killed, then resumed)
        left undelivered in it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        journal = cls(path, _locked(path, create=True))
        contents = read_journal(path)
        if not contents.run_id:
            journal._write({"run_id": run_id}, durable=True)
        return journal, contents

    @classmethod
    def take(cls, path: Path) -> tuple[Journal, Contents]:
        """The journal at `path` locked for replay, and its undelivered ops; `JournalBusy` while its
        run still holds it, FileNotFoundError once that run has delivered everything."""
        journal = cls(path, _locked(path, create=False))
        return journal, read_journal(path)

    def _write(self, record: dict[str, Any], durable: bool) -> None:
        self._f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._f.flush()
        if durable:
            os.fsync(self._f.fileno())

    def append(self, q: Queued) -> None:
        self._write({"seq": q.seq, "kind": q.op.kind, "data": q.op.data, "extra": q.op.extra}, durable=True)
        q.journaled = True

    def ack(self, q: Queued) -> None:
        if q.journaled:
            self._write({"ack": q.seq}, durable=False)

    def close(self) -> None:
        """Keep the file for `runs sync`; release the lock."""
        if not self._f.closed:
            os.fsync(self._f.fileno())
            self._f.close()

    def remove(self) -> None:
        """Everything in it was delivered: the file goes (before the lock, so no replay starts)."""
        self.path.unlink(missing_ok=True)
        self._f.close()


def read_journal(path: Path) -> Contents:
    """The run id and the ops not yet acknowledged, in order. A torn last line (the process died
    while appending it, before `put` returned) is left out; a damaged line elsewhere is an error."""
    lines = path.read_text(encoding="utf-8").splitlines()
    run_id, ops, acked, top = "", {}, set(), -1
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise JournalDamaged(f"{path} is damaged at line {i + 1}, so the order of its ops after that line is "
                                 "unknown. Move it aside (the ops before that line can be cut out into a file of "
                                 "their own and synced), then run `ttt-lab runs sync` again.") from None
        if "run_id" in rec:
            run_id = rec["run_id"]
        elif "ack" in rec:
            acked.add(rec["ack"])
        else:
            ops[rec["seq"]] = Queued(rec["seq"], Op(rec["kind"], rec["data"], rec.get("extra")), journaled=True)
            top = max(top, rec["seq"])
    return Contents(run_id, [q for seq, q in sorted(ops.items()) if seq not in acked], top + 1)



@dataclass
class Outbox:
    send: Callable[[Op], None]
    """Delivers one op (raises on failure)."""
    remote: bool
    """A tracking server (outages are waited out) or a local store (errors raise)."""
    journal_path: Path | None = None
    """Where ops queued during an outage are kept (remote stores)."""
    run_id: str = ""
    pending: list[Queued] = field(default_factory=list)
    journal: Journal | None = None
    down_since: float | None = None
    last_try: float = 0.0
    next_seq: int = 0
    announce: bool = True
    """Say when the server goes and comes back (a run does; `runs sync` reports on its own)."""

    def put(self, op: Op) -> None:
        q = Queued(self.next_seq, op)
        self.next_seq += 1
        self.pending.append(q)
        if self.journal is not None:
            self.journal.append(q)
        if self.down_since is None or time.monotonic() - self.last_try >= RETRY_EVERY_S:
            self.drain()

    def drain(self) -> bool:
        """Send what is pending, in order; False when the server is still unreachable."""
        self.last_try = time.monotonic()
        while self.pending:
            q = self.pending[0]
            try:
                self.send(q.op)
            except Exception as e:
                if self.remote and is_outage(e):
                    self._went_down(e)
                    return False
                self._delivered()  # refused, not lost to an outage: reported, and out of the way
                raise
            self._delivered()
        if self.journal is not None:
            self.journal.remove()
            self.journal = None
        if self.down_since is not None and self.announce:
            LOG.info(f"the tracking server is back after {time.monotonic() - self.down_since:.0f} s; everything "
                     "logged meanwhile is sent.")
        self.down_since = None
        return True

    def _delivered(self) -> None:
        q = self.pending.pop(0)
        if self.journal is not None:
            self.journal.ack(q)

    def _went_down(self, e: BaseException) -> None:
        """From now on keep everything pending on disk (a server with a journal path)."""
        if self.journal is None and self.journal_path is not None:
            self._open_journal()
        if self.down_since is None and self.announce:
            where = f" in {self.journal.path}" if self.journal is not None else ""
            LOG.warning(f"the tracking server cannot be reached ({_short(e)}); the run goes on and keeps what it "
                        f"logs{where} until the server is back.")
        if self.down_since is None:
            self.down_since = time.monotonic()

    def _open_journal(self) -> None:
        assert self.journal_path is not None
        try:
            self.journal, left = Journal.create(self.journal_path, self.run_id)
        except (JournalBusy, OSError) as e:
            LOG.warning(f"cannot keep the run's queued sends on disk ({e}); they are kept in memory.")
            self.journal_path = None
            return
        for i, q in enumerate(self.pending):  # numbered after what the file holds already
            q.seq = left.next_seq + i
        self.next_seq = left.next_seq + len(self.pending)
        for q in self.pending:
            self.journal.append(q)
        self.pending = left.unacked + self.pending  # an earlier process's leftovers were queued first

    def close(self, wait_s: float = END_WAIT_S) -> Path | None:
        """Deliver everything, waiting up to `wait_s` for the server; else leave the journal (its
        path returned) for `ttt-lab runs sync`."""
        deadline = time.monotonic() + wait_s
        while not self.drain():
            if time.monotonic() >= deadline:
                return self._leave()
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
        return None

    def _leave(self) -> Path | None:
        if self.journal is None:
            return None
        self.journal.close()
        path, self.journal = self.journal.path, None
        LOG.warning(f"the tracking server is still unreachable; what the run logged meanwhile is in {path}. Send "
                    "it with `ttt-lab runs sync` once the server is back.")
        return path


def _short(e: BaseException) -> str:
    from ttt_lab.redact import redact

    text = redact(" ".join(str(e).split()))
    return text[:160] + ("..." if len(text) > 160 else "")
