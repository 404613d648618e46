"""A training is SIGKILLed (the OOM killer, a preempted job) while its tracking server is down:
every metric it logged before the kill reaches the server after `ttt-lab runs sync`, once and
in order. A real `mlflow server`, a real training, a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import cli, start
from tests.tracking.conftest import Server

pytestmark = pytest.mark.slow

STEPS = 2000
"""More than the test lets it reach: the kill always comes mid-training."""


def _journal_metrics(path: Path) -> list[tuple[str, float, int, int]]:
    """The metric values the journal holds, in the order they were queued."""
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "metrics":
            out += [tuple(m) for m in rec["data"]]
    return out


def _wait_until(check, proc, what: str, deadline_s: float = 300) -> None:
    """Poll `check` (a state the training reaches by itself) until it holds, with a deadline."""
    deadline = time.monotonic() + deadline_s
    while not check():
        assert proc.proc.poll() is None, f"the training ended before {what}:\n{proc.text}"
        assert time.monotonic() < deadline, f"no {what} within {deadline_s} s:\n{proc.text}"
        time.sleep(0.2)


def test_every_metric_logged_before_a_sigkill_in_an_outage_reaches_the_server_once_in_order(
        home: Path, server: Server) -> None:
    proc = start("train", "experiment=smoke", f"steps={STEPS}", "batch_size=8", "tracking=server",
                 f"tracking.uri={server.uri}", "train.save_every=100000")
    _wait_until(lambda: len(server.history("train/phase")) >= 3, proc, "three steps on the server")
    server.kill()
    proc.wait_for("the tracking server cannot be reached", deadline_s=300)
    journals = lambda: list((home / "tracking-fallback").glob("*.jsonl"))  # noqa: E731
    _wait_until(lambda: journals() and sum(m[0] == "train/phase" for m in _journal_metrics(journals()[0])) >= 5,
                proc, "five steps kept on disk")
    os.kill(proc.proc.pid, signal.SIGKILL)
    assert proc.finish() == -signal.SIGKILL

    (journal,) = journals()
    kept = _journal_metrics(journal)  # everything the training handed over after the server went
    server.start()
    before = {(m.key, m.value, m.timestamp, m.step) for key in {k for k, *_ in kept}
              for m in server.metric_log(key)}
    out = cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}")
    assert "Traceback" not in out.stderr and not journal.exists()

    for key in sorted({k for k, *_ in kept}):
        stored = server.metric_log(key)
        values = [(m.key, m.value, m.timestamp, m.step) for m in stored]
        assert len(values) == len(set(values)), f"{key}: a value stored twice"
        assert {v for v in kept if v[0] == key} <= set(values), f"{key}: a value kept on disk did not arrive"
        assert set(values) <= {v for v in kept if v[0] == key} | before, f"{key}: a value nobody logged"
    steps = [m.step for m in sorted(server.metric_log("train/phase"), key=lambda m: (m.timestamp, m.step))]
    last = max(m[3] for m in kept if m[0] == "train/phase")
    assert steps == list(range(1, last + 1)), "every step before the kill, once, in the order logged"
    assert server.status() == ["RUNNING"], "a killed run is not reported as finished"
    assert cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}").stdout.startswith("nothing to send")
