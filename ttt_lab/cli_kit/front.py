"""The CLI's front end: ttt-lab's log lines and events drawn on one rich console (tables as rich
tables, trials coloured by state, progress as live bars where the console is a terminal)."""

from __future__ import annotations

import logging

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ttt_lab import events, log
from ttt_lab.cli_kit.tables import rich_table

STATE_STYLE = {"COMPLETE": "green", "PRUNED": "yellow", "FAIL": "red"}


class RateColumn(ProgressColumn):
    def __init__(self, unit: str = "games") -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} {self.unit}/s" if speed else f"- {self.unit}/s", style="cyan")


def bars(console: Console, unit: str = "games") -> Progress:
    """Counted work as a bar: done/total, units per second, elapsed time and ETA."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(unit),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console, transient=False, disable=not console.is_terminal,
    )


class RichFront(logging.Handler):
    """A log handler (each record one plain line, no markup read from the message) and an
    `events.Front` on the same console."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.INFO)
        self.console = console
        self.is_terminal = console.is_terminal
        self.live: Progress | None = None
        self.tasks: dict[int, TaskID] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.console.print(self.format(record), highlight=False, markup=False)
        except Exception:  # logging must never end the work it reports on
            self.handleError(record)

    def __call__(self, event: events.Event) -> None:
        if isinstance(event, events.Table):
            self.console.print(rich_table(event))
        elif isinstance(event, events.TrialEnded):
            text = Text(f"trial {event.number} ")
            text.append(event.state, style=STATE_STYLE.get(event.state, ""))
            text.append(str(event).removeprefix(f"trial {event.number} {event.state}"))
            self.console.print(text, highlight=False)
        else:
            self._progress(event)

    def _progress(self, p: events.Progress) -> None:
        if self.live is None:
            self.live = bars(self.console, p.unit)
            self.live.start()
        if p.task not in self.tasks:
            self.tasks[p.task] = self.live.add_task(p.description, total=p.total)
        self.live.update(self.tasks[p.task], completed=p.completed)
        if p.done:
            self.live.stop_task(self.tasks.pop(p.task))
            if not self.tasks:
                self.live.stop()
                self.live = None


def install(console: Console) -> RichFront:
    """Draw ttt-lab's lines and events on `console` from now on."""
    front = RichFront(console)
    log.install(front)
    events.install(front)
    return front
