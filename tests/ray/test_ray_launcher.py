"""`ttt-lab sweep --launcher ray` on a real local Ray cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import cli, start
from tests.studies.helpers import split_runs, study
from ttt_lab.studies.spec import from_args

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]


def _storage(home: Path) -> str:
    return f"sqlite:///{home}/optuna.db"


def test_a_grid_runs_as_ray_actors_and_wait_follows_them(home: Path, ray_cluster) -> None:
    args = ["experiment=smoke", "batch_size=8,16", "seed=0,1", "--launcher", "ray", "launcher.workers=2"]
    out = cli("sweep", *args, "--wait")
    assert "submitted 2 worker(s) to ray" in out.stdout, out.stdout
    name = from_args(["experiment=smoke", "batch_size=8,16", "seed=0,1"]).name
    trials = study(_storage(home), name).get_trials(deepcopy=False)
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert all(t.user_attrs["job"].startswith(name) for t in trials)
    (parent,), children = split_runs(home, name)
    assert parent.info.status == "FINISHED" and sum(r.info.status == "FINISHED" for r in children) == 4
    status = cli("sweep", *args, "--status")
    assert "4 complete" in status.stdout and "ENDED" in status.stdout, status.stdout


def _on(node, pid: int) -> bool:
    """Whether process `pid` runs under `node`'s raylet (a worker of that node)."""
    import psutil

    raylets = {process.pid for _, process in node.live_processes()}
    try:
        return any(parent.pid in raylets for parent in psutil.Process(pid).parents())
    except psutil.NoSuchProcess:
        return False


def test_a_node_killed_mid_trial_leaves_every_trial_finished_once(home: Path, ray_cluster) -> None:
    """The second node is killed (its own processes) while its worker runs a trial: --wait fails
    that trial and queues it again, the head's worker runs it, and every grid point ends COMPLETE
    exactly once."""
    cluster, second = ray_cluster
    args = ["experiment=smoke", "steps=6,5,1,2", "batch_size=16", "--launcher", "ray", "launcher.workers=2",
            "launcher.poll_s=0.5"]
    name = from_args(["experiment=smoke", "steps=6,5,1,2", "batch_size=16"]).name
    proc = start("sweep", *args, "--wait")
    end = time.monotonic() + 240
    victim = None
    while time.monotonic() < end and victim is None:
        try:
            trials = study(_storage(home), name).get_trials(deepcopy=False)
        except KeyError:
            trials = []
        victim = next((t for t in trials if t.state.name == "RUNNING" and "mlflow_run_id" in t.user_attrs
                       and _on(second, t.user_attrs["pid"])), None)
        time.sleep(0.2)
    assert victim is not None, proc.text
    cluster.remove_node(second, allow_graceful=False)
    assert proc.finish() == 0, proc.text
    trials = study(_storage(home), name).get_trials(deepcopy=False)
    assert trials[victim.number].state.name == "FAIL"
    done = sorted(t.user_attrs["overrides"][0] for t in trials if t.state.name == "COMPLETE")
    assert done == ["steps=1", "steps=2", "steps=5", "steps=6"]
    assert not [t for t in trials if t.state.name == "RUNNING"]


def test_no_cluster_is_one_clear_paragraph(home: Path, ray_cluster) -> None:
    out = cli("sweep", "experiment=smoke", "batch_size=8,16", "--launcher", "ray", "launcher.address=127.0.0.1:1",
              check=False)
    assert out.returncode == 2 and "found no Ray cluster at 127.0.0.1:1" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
