"""The first use of a fresh home by several processes at once: they are released together from a
barrier into creating the MLflow store and the Optuna storage, and none may fail."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("first-use")

PROCESSES = 4
FIRST_USE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    home, go = Path(sys.argv[1]), Path(sys.argv[2])
    from ttt_lab.tracking.store import open_store
    from ttt_lab.studies.storage import open_storage
    (home.parent / f"ready-{sys.argv[3]}").touch()
    while not go.exists():
        time.sleep(0.001)
    store = open_store(f"sqlite:///{home}/mlflow.db", str(home / "artifacts"), str(home))
    store.client.search_experiments(max_results=1)
    storage = open_storage(f"sqlite:///{home}/optuna.db")
    storage.get_all_studies()
""")


def test_processes_released_together_into_a_fresh_home_all_succeed(tmp_path: Path) -> None:
    home, go = tmp_path / "home", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_USE, str(home), str(go), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(PROCESSES)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < PROCESSES and time.monotonic() < deadline:
        time.sleep(0.05)  # every process imported and waits at the barrier
    go.touch()
    results = [p.communicate(timeout=300) for p in procs]
    failed = [(p.returncode, err[-2000:]) for p, (_, err) in zip(procs, results, strict=True) if p.returncode]
    assert not failed, failed
