"""A real `mlflow server` for the tracking tests, over a SQLite file that outlives the process
(stop it, start it again: the same store)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port


class Server:
    """`mlflow server` on 127.0.0.1 over `folder/server.db` (a copy of an already-migrated store,
    so a start does not spend its time on migrations)."""

    def __init__(self, folder: Path, template: Path) -> None:
        self.folder, self.port, self.proc = folder, free_port(), None
        self.uri = f"http://127.0.0.1:{self.port}"
        if not (folder / "server.db").exists():
            shutil.copy(template / "mlflow.db", folder / "server.db")

    def start(self) -> None:
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--workers", "1", "--backend-store-uri", f"sqlite:///{self.folder}/server.db",
               "--artifacts-destination", str(self.folder / "artifacts")]
        log = (self.folder / "server.log").open("a")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"))
        deadline = time.monotonic() + 180
        while True:  # polls the server's own readiness signal, with a deadline
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2):
                    return
            except OSError:
                log_text = (self.folder / "server.log").read_text()
                assert self.proc.poll() is None and time.monotonic() < deadline, log_text
                time.sleep(0.3)

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def client(self):
        from mlflow.tracking import MlflowClient

        return MlflowClient(self.uri)

    def runs(self, kind: str | None = None) -> list:
        client = self.client()
        where = f"tags.`ttt.kind` = '{kind}'" if kind else ""
        return client.search_runs([e.experiment_id for e in client.search_experiments()], where)

    def metric_log(self, key: str, kind: str = "train") -> list:
        """Every stored value of `key` in the runs of `kind`, as MLflow keeps them (duplicates too)."""
        client = self.client()
        return [m for r in self.runs(kind) for m in client.get_metric_history(r.info.run_id, key)]

    def history(self, key: str) -> list[int]:
        return sorted(m.step for m in self.metric_log(key))

    def status(self) -> list[str]:
        return [r.info.status for r in self.runs()]


@pytest.fixture
def server(tmp_path: Path, shared_home: Path):
    s = Server(tmp_path, shared_home)
    s.start()
    yield s
    if s.proc.poll() is None:
        s.kill()


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory, shared_home: Path):
    s = Server(tmp_path_factory.mktemp("server"), shared_home)
    s.start()
    yield s
    if s.proc.poll() is None:
        s.kill()
