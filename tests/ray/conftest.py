"""A real Ray cluster for the tier: `ray start --head` on this machine, stopped after the session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import free_port


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """The cluster's address; RAY_ADDRESS set for every command the tests start."""
    pytest.importorskip("ray", reason="Ray is not installed in this environment: `make test-ray` builds one "
                                      "(.venv-ray) and runs these tests")
    ray_bin = str(Path(sys.executable).parent / "ray")
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths must stay short
    port = free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    subprocess.run([ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                    "--disable-usage-stats", f"--temp-dir={temp}"], check=True, env=env, capture_output=True,
                   timeout=180)
    address = f"127.0.0.1:{port}"
    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = address
    try:
        yield address
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=120)
        if before is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = before
        shutil.rmtree(temp, ignore_errors=True)
