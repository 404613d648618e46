"""A real `mlflow server` on 127.0.0.1 dies in the middle of a training run: the training
finishes and nothing it logged is lost (kept and sent when the server is back, or left in a
fallback file that `ttt-lab runs sync` delivers)."""

import time
from pathlib import Path

import pytest

from tests.conftest import cli, start
from tests.tracking.conftest import Server

pytestmark = pytest.mark.slow

STEPS = 60
WAIT_S = 600
"""How long the run waits for its server at the end: longer than any restart takes here, so a
slow restart on a loaded machine cannot turn "kept and sent" into "left in a file" (the
default, 60 s, is about three restarts of `mlflow server` on a busy 2-core machine)."""


def _train(server: Server, *more: str):
    return start("train", "experiment=smoke", f"steps={STEPS}", "batch_size=8", "tracking=server",
                 f"tracking.uri={server.uri}", *more)


def _wait_for_steps(server: Server, n: int, proc) -> None:
    deadline = time.monotonic() + 300
    while len(server.history("train/phase")) < n:
        assert proc.proc.poll() is None and time.monotonic() < deadline, proc.text
        time.sleep(0.2)


def test_a_server_restarted_mid_training_gets_every_metric(home: Path, server: Server) -> None:
    proc = _train(server, f"tracking.outage_wait_s={WAIT_S}")
    _wait_for_steps(server, 1, proc)  # killed at once: the steps still to come are the outage's
    server.kill()
    proc.wait_for("the tracking server cannot be reached", deadline_s=300)
    server.start()
    assert proc.finish() == 0, proc.text
    assert "is back after" in proc.text and "Traceback" not in proc.text
    assert server.history("train/phase") == list(range(1, STEPS + 1))
    assert server.status() == ["FINISHED"]


def test_a_server_gone_at_the_end_leaves_a_file_that_runs_sync_delivers(home: Path, server: Server) -> None:
    proc = _train(server, "tracking.outage_wait_s=0")
    _wait_for_steps(server, 3, proc)
    server.kill()
    assert proc.finish() == 0, proc.text
    kept = list((home / "tracking-fallback").glob("*.jsonl"))
    assert len(kept) == 1 and "runs sync" in proc.text and "Traceback" not in proc.text
    down = cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}", check=False)
    assert down.returncode == 2 and "cannot reach" in down.stderr and kept[0].exists()
    server.start()
    cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}")
    assert not kept[0].exists()
    assert server.history("train/phase") == list(range(1, STEPS + 1))
    assert server.status() == ["FINISHED"]
