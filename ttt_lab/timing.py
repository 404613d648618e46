"""Where a training's wall time goes: named phases on one clock, each second charged to the
innermost phase open at that moment (an evaluation inside an RL phase is evaluation, a metric
sent from inside it is tracking), so the phases add up to the wall time, with nothing counted
twice. Code at any layer marks a phase with `phase(name)`; it costs nothing where no clock runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

PHASES = ("start", "warm_up", "rl", "eval", "audit", "tracking", "other")
"""The phases a study's report shows, in order: `start` is the process's own start (imports,
spawning) before its first trial, `other` whatever no phase claims (loading checkpoints, configs)."""
PREFIX = "time/"

_current: ContextVar[Clock | None] = ContextVar("ttt_lab_clock", default=None)
_start = {"unclaimed": False}


class Clock:
    """Seconds per phase since the clock started; time outside any phase is `other`."""

    def __init__(self, *, already: float = 0.0) -> None:
        """`already`: seconds spent before the clock existed, charged to `start`."""
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.seconds["start"] = max(0.0, already)
        self._stack: list[str] = []
        self._since = time.perf_counter()

    def _charge(self) -> None:
        now = time.perf_counter()
        self.seconds[self._stack[-1] if self._stack else "other"] += now - self._since
        self._since = now

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name not in self.seconds:
            raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    def metrics(self) -> dict[str, float]:
        """`time/<phase>_s` for every phase and `time/total_s`, their sum."""
        self._charge()
        out = {f"{PREFIX}{k}_s": round(v, 3) for k, v in self.seconds.items()}
        out[f"{PREFIX}total_s"] = round(sum(self.seconds.values()), 3)
        return out


@contextlib.contextmanager
def running(clock: Clock) -> Iterator[Clock]:
    """Make `clock` the one `phase` charges, in this thread, for the block."""
    token = _current.set(clock)
    try:
        yield clock
    finally:
        _current.reset(token)


def current() -> Clock | None:
    """The clock running in this thread, if any."""
    return _current.get()


def phase(name: str) -> contextlib.AbstractContextManager[None]:
    """Charge the block to `name` on the running clock (nothing when none runs)."""
    clock = _current.get()
    return clock.phase(name) if clock is not None else contextlib.nullcontext()


def own_process() -> None:
    """Say that this process was started to run ttt-lab (the CLI, a sweep worker): its start-up
    is then charged to the first clock that claims it."""
    _start["unclaimed"] = True


def claim_start() -> float:
    """This process's start-up seconds, once, in a process ttt-lab started; 0 otherwise (a
    notebook's age is not ttt-lab's start)."""
    if not _start["unclaimed"]:
        return 0.0
    _start["unclaimed"] = False
    return process_age()


def process_age() -> float:
    """Seconds since this process started (0 where the platform does not say)."""
    try:
        import psutil
    except ImportError:
        return 0.0
    return max(0.0, time.time() - psutil.Process().create_time())
