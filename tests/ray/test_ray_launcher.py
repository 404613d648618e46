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


def test_a_grid_runs_as_ray_actors_and_wait_follows_them(home: Path, ray_cluster: str) -> None:
    args = ["experiment=smoke", "batch_size=8,16", "seed=0,1", "--launcher", "ray", "launcher.workers=2"]
    out = cli("sweep", *args, "--wait")
    assert "submitted 2 worker(s) to ray" in out.stdout, out.stdout
    name = from_args(["experiment=smoke", "batch_size=8,16", "seed=0,1"]).name
    trials = study(_storage(home), name).get_trials(deepcopy=False)
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert {t.user_attrs["job"] for t in trials} <= {ln.split()[0] for ln in out.stdout.splitlines() if ln}.union(
        {t.user_attrs["job"] for t in trials})
    assert all(t.user_attrs["job"].startswith(name) for t in trials)
    (parent,), children = split_runs(home, name)
    assert parent.info.status == "FINISHED" and sum(r.info.status == "FINISHED" for r in children) == 4
    status = cli("sweep", *args, "--status")
    assert "4 complete" in status.stdout and "ENDED" in status.stdout, status.stdout


def test_a_killed_ray_worker_leaves_no_trial_running(home: Path, ray_cluster: str) -> None:
    """The actor running trial 0 is killed (as when its node dies): --wait fails that trial and
    queues it again, the other worker runs it, and every grid point ends COMPLETE."""
    import ray

    args = ["experiment=smoke", "steps=6,1,2", "batch_size=16", "--launcher", "ray", "launcher.workers=2",
            "launcher.poll_s=0.5"]
    name = from_args(["experiment=smoke", "steps=6,1,2", "batch_size=16"]).name
    proc = start("sweep", *args, "--wait")
    end = time.monotonic() + 240
    job = None
    while time.monotonic() < end and job is None:
        try:
            t0 = study(_storage(home), name).get_trials(deepcopy=False)[0]
            job = t0.user_attrs.get("job") if t0.state.name == "RUNNING" and "mlflow_run_id" in t0.user_attrs else None
        except (KeyError, IndexError):
            pass
        time.sleep(0.2)
    assert job, proc.text
    ray.init(address=ray_cluster, namespace="ttt-lab", log_to_driver=False, ignore_reinit_error=True)
    ray.kill(ray.get_actor(job, namespace="ttt-lab"), no_restart=True)
    assert proc.finish() == 0, proc.text
    trials = study(_storage(home), name).get_trials(deepcopy=False)
    assert trials[0].state.name == "FAIL" and "job ended" in trials[0].user_attrs["error"]
    assert sorted(t.user_attrs["overrides"][0] for t in trials if t.state.name == "COMPLETE") == [
        "steps=1", "steps=2", "steps=6"]
    assert not [t for t in trials if t.state.name == "RUNNING"]


def test_no_cluster_is_one_clear_paragraph(home: Path, ray_cluster: str) -> None:
    out = cli("sweep", "experiment=smoke", "batch_size=8,16", "--launcher", "ray", "launcher.address=127.0.0.1:1",
              check=False)
    assert out.returncode == 2 and "found no Ray cluster at 127.0.0.1:1" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
