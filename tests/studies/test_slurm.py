"""`ttt-lab sweep --launcher slurm` against a real single-node SLURM cluster, a real PostgreSQL
storage and a real MLflow server (all started by the test): the job array runs the grid."""

import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.studies import postgres, slurm
from tests.tracking.test_server_outage import Server
from ttt_lab.studies.spec import from_args

WHY = slurm.missing() or (None if postgres.binaries() else "no PostgreSQL server binaries (pg_ctl, initdb)")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY is not None, reason=WHY or "")]


def test_a_grid_runs_as_a_slurm_job_array(home: Path, tmp_path: Path) -> None:
    import mlflow
    import optuna

    tracking = Server(tmp_path)
    tracking.start()
    args = ["experiment=smoke", "batch_size=8,16", f"tracking.uri={tracking.uri}"]
    name = from_args(args).name
    try:
        with slurm.cluster() as env, postgres.server() as url:
            out = cli("sweep", *args, "--launcher", "slurm", "--workers", "2", "--storage", url,
                      "launcher.cpus_per_worker=1", "launcher.time_min=10", "--wait", "launcher.poll_s=1", env=env)
            assert "submitted 2 worker(s) to slurm" in out.stdout, out.stdout + out.stderr
            assert "trial 0 COMPLETE" in out.stdout and "trial 1 COMPLETE" in out.stdout, out.stdout
            deadline = time.monotonic() + 400
            while True:
                trials = optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)
                if sum(t.state.name == "COMPLETE" for t in trials) == 2:
                    break
                queue = subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env).stdout
                logs = "".join(p.read_text() for p in (home / "launcher").rglob("*_log.*"))
                assert time.monotonic() < deadline, (queue, [t.state.name for t in trials], logs[-3000:])
                time.sleep(1)
            jobs = {t.user_attrs["job"] for t in trials}
            assert all("_" in j for j in jobs), jobs  # array tasks: <array id>_<task>
            status = cli("sweep", *args, "--status", "--storage", url, env=env)
            assert "2 complete" in status.stdout, status.stdout
            runs = mlflow.MlflowClient(tracking.uri).search_runs(
                [mlflow.MlflowClient(tracking.uri).get_experiment_by_name(name).experiment_id])
            assert sorted(r.data.tags.get("ttt.kind") for r in runs) == ["sweep", "trial", "trial"]
            assert all(r.info.status == "FINISHED" for r in runs), [r.info.status for r in runs]
    finally:
        tracking.kill()
