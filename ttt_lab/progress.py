"""Progress of counted work (games, trials, model turns) as `events.Progress`: the front end draws
the bars (the CLI's rich ones), an API user without one sees nothing."""

from __future__ import annotations

import itertools
from types import TracebackType

from ttt_lab import events

_ids = itertools.count(1)


class Counter:
    """Tasks counted on one front end; the subset of rich's `Progress` the callers use."""

    def __init__(self, front: events.Front, unit: str) -> None:
        self.front, self.unit = front, unit
        self.tasks: dict[int, events.Progress] = {}

    def __enter__(self) -> Counter:
        return self

    def add_task(self, description: str, total: float | None = None) -> int:
        task = next(_ids)
        self._send(events.Progress(task, description, total, 0, self.unit))
        return task

    def advance(self, task: int, n: float = 1) -> None:
        p = self.tasks[task]
        self._send(events.Progress(task, p.description, p.total, p.completed + n, self.unit))

    def update(self, task: int, *, completed: float) -> None:
        p = self.tasks[task]
        self._send(events.Progress(task, p.description, p.total, completed, self.unit))

    def _send(self, p: events.Progress) -> None:
        self.tasks[p.task] = p
        self.front(p)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        for p in self.tasks.values():
            self.front(events.Progress(p.task, p.description, p.total, p.completed, self.unit, done=True))


def games_progress(front: events.Front | None = None, unit: str = "games") -> Counter:
    """Count work on `front` (the installed front end when None)."""
    return Counter(front or events.front(), unit)
