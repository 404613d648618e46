"""An exclusive lock on a file, so parallel workers build a shared cache (the tiny model,
the SFT warm-up) or train one config once: the first builds, the others wait and then reuse it.

The holder writes who it is (host, pid, since when) into the lock file, so a waiter can say
whom it waits for; with `timeout_s` a waiter gives up with an error naming the holder."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ttt_lab.errors import TttLabError

POLL_S = 0.5


class LockTimeout(TttLabError):
    pass


def holder(path: Path) -> str:
    """Who holds (or last held) the lock at `path`, as its holder wrote it."""
    try:
        return Path(path).read_text().strip() or "an unknown process"
    except OSError:
        return "an unknown process"


@contextlib.contextmanager
def file_lock(path: Path, on_wait: Callable[[], None] | None = None, timeout_s: float | None = None
              ) -> Iterator[None]:
    """Held until the block ends (or the process dies). `on_wait` runs once if another holds it;
    after `timeout_s` seconds of waiting, `LockTimeout` names the holder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            _wait(f, path, timeout_s)
        f.seek(0)
        f.truncate()
        f.write(f"{socket.gethostname()} pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _wait(f, path: Path, timeout_s: float | None) -> None:
    if timeout_s is None:
        fcntl.flock(f, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise LockTimeout(f"waited {timeout_s:g} s for the lock {path}, held by {holder(path)}. If that "
                                  "process is gone or hung, stop it (the lock goes with it) and run again.") from None
            time.sleep(POLL_S)
