"""A real `mlflow server` on 127.0.0.1 dies in the middle of a training run: the training
finishes and nothing it logged is lost (kept and sent when the server is back, or left in a
fallback file that `ttt-lab runs sync` delivers)."""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import cli, free_port, start

pytestmark = pytest.mark.slow

STEPS = 40


class Server:
    """`mlflow server` over one SQLite file, which outlives the process (stop / start again)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port, self.proc = folder, free_port(), None
        self.uri = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--workers", "1", "--backend-store-uri", f"sqlite:///{self.folder}/server.db",
               "--artifacts-destination", str(self.folder / "artifacts")]
        log = (self.folder / "server.log").open("a")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"))
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2):
                    return
            except OSError:
                log = (self.folder / "server.log").read_text()
                assert self.proc.poll() is None and time.monotonic() < deadline, log
                time.sleep(0.3)

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def history(self, key: str) -> list[int]:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self.uri)
        runs = client.search_runs([e.experiment_id for e in client.search_experiments()], "tags.`ttt.kind` = 'train'")
        return sorted(m.step for r in runs for m in client.get_metric_history(r.info.run_id, key))

    def status(self) -> list[str]:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self.uri)
        return [r.info.status for r in client.search_runs([e.experiment_id for e in client.search_experiments()])]


@pytest.fixture
def server(tmp_path: Path):
    s = Server(tmp_path)
    s.start()
    yield s
    if s.proc.poll() is None:
        s.kill()


def _train(server: Server, *more: str):
    return start("train", "experiment=smoke", f"steps={STEPS}", "batch_size=8", "tracking=server",
                 f"tracking.uri={server.uri}", *more)


def _wait_for_steps(server: Server, n: int, proc) -> None:
    deadline = time.monotonic() + 300
    while len(server.history("train/phase")) < n:
        assert proc.proc.poll() is None and time.monotonic() < deadline, proc.text
        time.sleep(0.5)


def test_a_server_restarted_mid_training_gets_every_metric(home: Path, server: Server) -> None:
    proc = _train(server)
    _wait_for_steps(server, 3, proc)
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
    kept = list((home / "tracking-fallback").glob("*.json"))
    assert len(kept) == 1 and "runs sync" in proc.text and "Traceback" not in proc.text
    down = cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}", check=False)
    assert down.returncode == 2 and "cannot reach" in down.stderr and kept[0].exists()
    server.start()
    cli("runs", "sync", "tracking=server", f"tracking.uri={server.uri}")
    assert not kept[0].exists()
    assert server.history("train/phase") == list(range(1, STEPS + 1))
    assert server.status() == ["FINISHED"]
