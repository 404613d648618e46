"""Where ttt-lab's progress lines go: the `ttt_lab` logger. Domain code logs and returns data;
the CLI installs one handler that prints through its console (secrets already redacted there);
from Python nothing is printed unless the caller configures `logging`. In a training of several
processes only rank 0 speaks."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import TextIO

from ttt_lab import events

ROOT = "ttt_lab"


def get(name: str) -> logging.Logger:
    """The logger of one part of ttt-lab (`ttt_lab.<name>`)."""
    return logging.getLogger(f"{ROOT}.{name}")


def is_rank_zero() -> bool:
    """This process is rank 0 of a training in several processes (torchrun sets RANK), or the only one."""
    return os.environ.get("RANK", "0") == "0"


class RankZero(logging.Filter):
    """Passes records of the process of rank 0 only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return is_rank_zero()


_MINE = "_ttt_lab_handler"


def _drop_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """Remove the handlers `install` added from `logger`; the ones removed."""
    mine = [h for h in logger.handlers if getattr(h, _MINE, False)]
    for h in mine:
        logger.removeHandler(h)
    return mine


def install(handler: logging.Handler) -> logging.Handler:
    """Send ttt-lab's INFO lines (rank 0's) to `handler` from now on, replacing one installed before."""
    logger = logging.getLogger(ROOT)
    _drop_handlers(logger)
    setattr(handler, _MINE, True)
    handler.setLevel(logging.INFO)
    handler.addFilter(RankZero())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


@contextlib.contextmanager
def to(stream: TextIO) -> Iterator[None]:
    """Write ttt-lab's lines, and its events as plain lines, to `stream` for the block (a sweep
    worker: each trial's own log)."""
    logger = logging.getLogger(ROOT)
    handlers, level, propagate = _drop_handlers(logger), logger.level, logger.propagate
    install(logging.StreamHandler(stream))
    try:
        with events.using(events.LINES):
            yield
    finally:
        _drop_handlers(logger)
        for h in handlers:
            logger.addHandler(h)
        logger.setLevel(level)
        logger.propagate = propagate


def console() -> events.Front:
    """The front end progress bars are drawn on (`is_terminal`: live), or plain lines when none is installed."""
    return events.front()
