"""`ttt-lab sweep --launcher slurm` on submitit's local executor (`launcher.cluster=local`):
real worker processes started by submitit, the same task code a SLURM array runs."""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import cli, start
from tests.studies.helpers import split_runs, study, study_created
from ttt_lab.studies.spec import from_args

LOCAL = ["--launcher", "slurm", "launcher.cluster=local", "launcher.poll_s=0.5", "--workers", "2", "--wait"]


def _storage(home: Path) -> str:
    return f"sqlite:///{home}/optuna.db"


def _pid_of_running_trial(home: Path, name: str, number: int, proc) -> int:
    end = time.monotonic() + 240
    while time.monotonic() < end:
        assert proc.proc.poll() is None, proc.finish() and proc.text
        created = study_created(home / "optuna.db", name)
        trials = study(_storage(home), name).get_trials(deepcopy=False) if created else []
        t = trials[number] if len(trials) > number else None
        if t is not None and t.state.name == "RUNNING" and "mlflow_run_id" in t.user_attrs:
            return t.user_attrs["pid"]
        time.sleep(0.2)
    raise AssertionError(f"trial {number} never ran:\n{proc.text}")


def test_a_grid_on_two_local_workers_survives_a_preempted_and_a_killed_worker(home: Path) -> None:
    """A 4-point grid on 2 submitit workers. Trial 0's worker gets SIGUSR2 (what SLURM sends
    before a time limit or a preemption): submitit's checkpoint fails and queues the trial, and
    the task is requeued and starts again. Trial 1's worker is SIGKILLed: the trial is failed and run
    again by the other worker (or a fresh one). Every point ends COMPLETE once, and the sweep
    exits 0: each failed attempt was run again."""
    args = ["experiment=smoke", "steps=5,6,1,2", "batch_size=16"]
    name = from_args(args).name
    proc = start("sweep", *args, *LOCAL)
    os.kill(_pid_of_running_trial(home, name, 0, proc), signal.SIGUSR2)
    os.kill(_pid_of_running_trial(home, name, 1, proc), signal.SIGKILL)
    assert proc.finish() == 0, proc.text
    assert "submitted 2 worker(s) to local" in proc.text, proc.text

    trials = study(_storage(home), name).get_trials(deepcopy=False)
    assert [t.state.name for t in trials[:2]] == ["FAIL", "FAIL"]
    assert "time limit or was preempted" in trials[0].user_attrs["error"]
    assert any(w in trials[1].user_attrs["error"] for w in ("died", "ended")), trials[1].user_attrs["error"]
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 4 and len({t.user_attrs["config_hash"] for t in complete}) == 4
    assert [t.state.name for t in trials].count("FAIL") == 2
    (parent,), children = split_runs(home, name)
    assert parent.info.status == "FINISHED"
    by_id = {r.info.run_id: r for r in children}
    assert all(by_id[t.user_attrs["mlflow_run_id"]].info.status == "FAILED" for t in trials[:2])
    assert sum(r.info.status == "FINISHED" for r in children) == 4

    jobs = json.loads((home / "launcher" / name / "jobs.json").read_text())
    assert {t.user_attrs["job"] for t in trials} <= {j["job_id"] for j in jobs}
    job = trials[0].user_attrs["job"]
    log = next((home / "launcher" / name).rglob(f"{job}_0_log.out")).read_text()
    assert f"Requeued job {job}" in log and log.count(f"Starting with JobEnvironment(job_id={job},") == 2, log
    status = cli("sweep", *args, "--status", "launcher.cluster=local")
    assert "4 complete, 2 fail" in status.stdout and "RUNNING" not in status.stdout, status.stdout


def test_the_sbatch_script_carries_the_launcher_settings() -> None:
    from ttt_lab.config.load import load
    from ttt_lab.studies.launchers.slurm import sbatch_script

    la = load(["launcher.partition=gpu", "launcher.time_min=90", "launcher.cpus_per_worker=6",
               "launcher.gpus_per_worker=1", "launcher.mem_gb=32", "launcher.max_parallel=2",
               "+launcher.sbatch.account=lab", "+launcher.sbatch.qos=high",
               "launcher.setup=[source .venv/bin/activate]"]).cfg.launcher
    script = sbatch_script(la, "bs", 4)
    for line in ("#SBATCH --partition=gpu", "#SBATCH --time=90", "#SBATCH --cpus-per-task=6",
                 "#SBATCH --gpus-per-node=1", "#SBATCH --mem=32GB", "#SBATCH --array=0-3%2",
                 "#SBATCH --account=lab", "#SBATCH --qos=high", "#SBATCH --job-name=ttt-lab-bs",
                 "source .venv/bin/activate", "-m submitit.core._submit"):
        assert line in script, (line, script)


@pytest.mark.parametrize(("args", "message"), [
    (["--launcher", "slurm"], "SQLite file"),
    (["--launcher", "slurm", "--storage", "postgresql://u:p@127.0.0.1:9/db"], "tracking store every node reaches"),
    (["--launcher", "slurm", "launcher.partiton=gpu"], "launcher.partiton"),
    (["--launcher", "pbs"], "not one of slurm"),
    (["launcher.cluster=local"], "without --launcher"),
    (["--wait"], "--wait follows launcher jobs"),
    (["--launcher", "slurm", "launcher.cluster=local", "launcher.time_min=0"], "launcher.time_min"),
])
def test_bad_launches_fail_before_anything_is_submitted(home: Path, args: list[str], message: str) -> None:
    out = cli("sweep", "experiment=smoke", "batch_size=8,16", *args, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in " ".join(out.stderr.split()), out.stderr
    assert not (home / "launcher").exists()


def test_without_sbatch_the_slurm_launcher_says_where_to_run(home: Path, tmp_path: Path) -> None:
    tracking = ["tracking.uri=http://127.0.0.1:9", "--storage", "postgresql://u:p@127.0.0.1:9/db"]
    out = cli("sweep", "experiment=smoke", "batch_size=8,16", "--launcher", "slurm", *tracking, check=False,
              env={**os.environ, "PATH": str(tmp_path)})
    assert out.returncode == 2 and "no `sbatch`/`srun`" in " ".join(out.stderr.split()), out.stderr


def _fake_scheduler(folder: Path) -> Path:
    """`sbatch` and `srun` that only note being called: the checks must stop before them."""
    folder.mkdir()
    for name in ("sbatch", "srun"):
        tool = folder / name
        tool.write_text(f"#!/bin/sh\necho called >> {folder}/{name}.called\nexit 1\n")
        tool.chmod(0o755)
    return folder


def test_an_unreachable_shared_storage_is_named_before_anything_is_submitted(home: Path, tmp_path: Path) -> None:
    bin_dir = _fake_scheduler(tmp_path / "bin")
    out = cli("sweep", "experiment=smoke", "batch_size=8,16", "--launcher", "slurm", "--storage",
              "postgresql://u:secret@127.0.0.1:9/optuna", "tracking.uri=http://127.0.0.1:9", check=False,
              env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot reach the Optuna storage" in " ".join(out.stderr.split()) and "secret" not in out.stderr
    assert not list(bin_dir.glob("*.called")) and not (home / "launcher").exists()


def test_a_dry_run_prints_the_array_script_and_submits_nothing(home: Path) -> None:
    out = cli("sweep", "experiment=smoke", "batch_size=8,16,24", "--launcher", "slurm", "--dry-run",
              "--workers", "3", "launcher.partition=cpu", "launcher.time_min=45")
    for line in ("#SBATCH --partition=cpu", "#SBATCH --time=45", "#SBATCH --array=0-2%3", "batch_size=24"):
        assert line in out.stdout, out.stdout
    assert not (home / "launcher").exists()


class _ThreadJob:
    def __init__(self, job_id: str, thread) -> None:
        self.job_id, self.thread = job_id, thread

    def done(self) -> bool:
        return not self.thread.is_alive()


class InThreads:
    """A launcher whose workers are threads of this process: what a new backend has to provide."""

    follow_to_exit = True

    def __init__(self) -> None:
        self.running: dict[str, object] = {}

    def check(self, la, storage_url: str, tracking_uri: str) -> None:
        pass

    def threads(self, la, workers: int) -> int:
        return 1

    def submit(self, jobs, la, folder: Path) -> list[_ThreadJob]:
        import dataclasses
        import threading

        from ttt_lab.studies.worker import JobLog, run_to_end

        out = []
        for j in jobs:
            job = dataclasses.replace(j, job_id=f"thread-{j.index}")
            thread = threading.Thread(target=run_to_end, args=(job, JobLog(), threading.Event()))
            thread.start()
            self.running[job.job_id] = thread
            out.append(_ThreadJob(job.job_id, thread))
        return out

    def state(self, la, folder: Path, job_id: str) -> str:
        """RUNNING while the job's thread runs (a sweep that waits follows it to its end)."""
        thread = self.running.get(job_id)
        return "RUNNING" if thread is not None and thread.is_alive() else "ENDED"

    def plan(self, la, study: str, workers: int) -> str | None:
        return f"{workers} thread(s)"


def test_a_registered_launcher_runs_a_grid_through_the_sweep(home: Path) -> None:
    from ttt_lab import api
    from ttt_lab.studies import launchers

    launchers.register("threads", InThreads())
    args = ["experiment=smoke", "batch_size=8,16", "launcher.workers=1", "launcher.poll_s=0.2"]
    result = api.sweep(None, args, launcher="threads", wait=True, trial_logs=str(home.parent / "logs"))
    assert (result.finished, result.failed, result.unfinished) == (2, 0, 0), result
    trials = study(_storage(home), result.name).get_trials(deepcopy=False)
    assert [t.state.name for t in trials] == ["COMPLETE"] * 2
    assert {t.user_attrs["job"] for t in trials} == {"thread-0"}
    (parent,), _ = split_runs(home, result.name)
    assert parent.info.status == "FINISHED"
    jobs = json.loads((home / "launcher" / result.name / "jobs.json").read_text())
    assert [(j["job_id"], j["cluster"]) for j in jobs] == [("thread-0", "threads")]
    assert sorted(p.name for p in (home.parent / "logs" / result.name).iterdir()) == ["trial-0.log", "trial-1.log"]
