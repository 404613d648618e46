"""What long work reports as it goes, as data: tables, finished trials, and progress of counted
work. The domain emits events to the installed front end (the CLI draws them with rich); with none
installed each table or trial is one plain line on the `ttt_lab` logger and progress is dropped,
so an API user sees text (with `logging.basicConfig`) or nothing, never an object's repr."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Event", "Front", "Progress", "Table", "TrialEnded", "TrialStarted", "WorkerExited", "WorkerReport", "emit",
           "front", "install", "using"]


@dataclass(frozen=True)
class Table:
    """Rows of text under a title; `str()` aligns them in plain columns."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __str__(self) -> str:
        widths = [max([len(c), *(len(r[i]) for r in self.rows)]) for i, c in enumerate(self.columns)]
        lines = [self.title, "  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in self.rows]
        return "\n".join(lines + ([self.caption] if self.caption else []))


@dataclass(frozen=True)
class TrialEnded:
    """A study's trial ended: its Optuna state (COMPLETE, PRUNED, FAIL) and its objective values or error."""

    number: int
    state: str
    detail: str
    seconds: float | None = None
    worker: int | None = None
    """The sweep worker that ran it (as a worker reports it to its pool)."""

    def __str__(self) -> str:
        took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
        return f"trial {self.number} {self.state}{took}  {self.detail}".rstrip()


@dataclass(frozen=True)
class TrialStarted:
    """A sweep worker claimed a trial and started it."""

    number: int
    worker: int

    def __str__(self) -> str:
        return f"trial {self.number} started"


@dataclass(frozen=True)
class WorkerExited:
    """A sweep worker left its loop: the study had nothing left for it, or it was told to stop."""

    worker: int

    def __str__(self) -> str:
        return f"worker {self.worker} exited"


WorkerReport = TrialStarted | TrialEnded | WorkerExited
"""What a sweep worker reports to whoever started it (its pool, or its job's log)."""


@dataclass(frozen=True)
class Progress:
    """Counted work: `completed` of `total` (None: unknown) `unit`s of task `task`; `done` when it ends."""

    task: int
    description: str
    total: float | None
    completed: float
    unit: str = "games"
    done: bool = False

    def __str__(self) -> str:
        of = f"/{self.total:g}" if self.total is not None else ""
        return f"{self.description}: {self.completed:g}{of} {self.unit}{' (done)' if self.done else ''}"


Event = Table | TrialEnded | Progress


class Front(Protocol):
    """Where events go: a callable that shows them; `is_terminal` says whether bars are drawn live."""

    is_terminal: bool

    def __call__(self, event: Event) -> None: ...


class _Lines:
    """No front end: tables and trials as plain INFO lines on the `ttt_lab.events` logger, progress dropped."""

    is_terminal = False

    def __call__(self, event: Event) -> None:
        if not isinstance(event, Progress):
            logging.getLogger("ttt_lab.events").info("%s", event)


LINES: Front = _Lines()
_installed: list[Front] = []


def front() -> Front:
    """The installed front end, or plain log lines."""
    return _installed[-1] if _installed else LINES


def emit(event: Event) -> None:
    front()(event)


def install(new: Front | None) -> None:
    """Send events to `new` from now on (None: plain log lines again)."""
    _installed.clear()
    if new is not None:
        _installed.append(new)


@contextlib.contextmanager
def using(new: Front) -> Iterator[None]:
    """Send events to `new` for the block (a sweep worker: each trial's own log file)."""
    _installed.append(new)
    try:
        yield
    finally:
        _installed.remove(new)
