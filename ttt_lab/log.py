"""Where ttt-lab's progress lines go: the `ttt_lab` logger. Domain code logs and returns data;
the CLI installs one handler that prints through its rich console (secrets already redacted
there); from Python nothing is printed unless the caller configures `logging`. In a training of
several processes only rank 0 speaks."""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Iterator

from rich.console import Console

ROOT = "ttt_lab"


def get(name: str) -> logging.Logger:
    """The logger of one part of ttt-lab (`ttt_lab.<name>`)."""
    return logging.getLogger(f"{ROOT}.{name}")


class RankZero(logging.Filter):
    """Passes records of the process of rank 0 only (torchrun sets RANK; one process is rank 0)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return os.environ.get("RANK", "0") == "0"


class ConsoleHandler(logging.Handler):
    """Each record as one plain line on a rich console (no highlighting; markup only where the
    record says `extra={"markup": True}`); a record whose message is a rich renderable (a table a
    long-running study shows as it goes) is drawn as it is."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.INFO)
        self.console = console
        self.addFilter(RankZero())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if hasattr(record.msg, "__rich_console__") or hasattr(record.msg, "__rich__"):
                self.console.print(record.msg)
            else:
                self.console.print(self.format(record), highlight=False, markup=getattr(record, "markup", False))
        except Exception:  # logging must never end the work it reports on
            self.handleError(record)


def _drop_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """Remove this module's handlers from `logger`; the ones removed."""
    mine = [h for h in logger.handlers if isinstance(h, ConsoleHandler)]
    for h in mine:
        logger.removeHandler(h)
    return mine


def install(console: Console) -> ConsoleHandler:
    """Print ttt-lab's lines on `console` from now on (replacing a handler installed before)."""
    logger = logging.getLogger(ROOT)
    _drop_handlers(logger)
    handler = ConsoleHandler(console)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


@contextlib.contextmanager
def to(console: Console) -> Iterator[None]:
    """Print ttt-lab's lines on `console` for the block (a sweep worker: each trial's own log)."""
    logger = logging.getLogger(ROOT)
    handlers, level, propagate = _drop_handlers(logger), logger.level, logger.propagate
    install(console)
    try:
        yield
    finally:
        _drop_handlers(logger)
        for h in handlers:
            logger.addHandler(h)
        logger.setLevel(level)
        logger.propagate = propagate


def console() -> Console:
    """The console the lines go to (progress bars draw there), or a silent one when none is installed."""
    for h in logging.getLogger(ROOT).handlers:
        if isinstance(h, ConsoleHandler):
            return h.console
    return Console(file=io.StringIO())
