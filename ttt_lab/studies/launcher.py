"""`ttt-lab sweep --launcher slurm`: the study's workers as a SLURM job array through submitit.

Each array task runs the ordinary worker loop (`worker.worker_main`) against the shared
Optuna storage and tracking server, so nothing about claiming, recovery or tracking changes.
What a cluster adds is handled here: a task stopped by its time limit or a preemption
(submitit's USR2 signal) fails its trial, queues it again and is requeued by submitit
(`checkpoint`); a task killed outright leaves its trial to the other workers' recovery, which
queues it again (`WorkerJob.requeue_dead`); `--wait` follows the study and fails the trials
of tasks that ended under them. `launcher.cluster=local` runs the same path on this machine
through submitit's local executor (real processes)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import submitit
from rich.console import Console
from rich.table import Table
from submitit.local.local import LOCAL_REQUEUE_RETURN_CODE

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.worker import WorkerJob, worker_main

JOBS_FILE = "jobs.json"


@dataclass(frozen=True)
class LaunchRequest:
    launcher: LauncherConfig
    wait: bool = False


def check_launch(la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
    """Refuse, before anything is created or submitted, what cannot work on a cluster."""
    if la.cluster != "slurm":
        return
    if storage_url.startswith("sqlite"):
        raise StudyError(f"--launcher slurm needs an Optuna storage every node reaches: {storage_url.split('?')[0]} "
                         "is a SQLite file, which workers on other nodes cannot share (file locks over network file "
                         "systems are unreliable). Pass --storage postgresql://user:password@host:5432/db, or "
                         "--storage journal:///shared/path/study.log (a file on a file system every node mounts, no "
                         "database server), or set $TTT_LAB_OPTUNA_STORAGE; or try the launch on this machine with "
                         "launcher.cluster=local.")
    if not tracking_uri.startswith(("http://", "https://", "postgresql", "mysql")):
        raise StudyError(f"--launcher slurm needs a tracking store every node reaches; tracking.uri={tracking_uri} "
                         "is a local file. Start an MLflow server (`mlflow server --backend-store-uri postgresql://…`) "
                         "and pass tracking.uri=http://HOST:5000, or try the launch here with launcher.cluster=local.")
    if shutil.which("sbatch") is None or shutil.which("srun") is None:
        raise StudyError("--launcher slurm found no `sbatch`/`srun` on this machine: run the sweep from a SLURM login "
                         "node, or try the launch on this machine with launcher.cluster=local.")


def folder_of(la: LauncherConfig, study: str) -> Path:
    return Path(la.log_dir).resolve() / study


def slurm_parameters(la: LauncherConfig, study: str, workers: int) -> dict:
    """submitit's SlurmExecutor parameters for the schema's `launcher.*`."""
    params: dict = {"job_name": f"ttt-lab-{study}", "time": la.time_min, "cpus_per_task": la.cpus_per_worker,
                    "array_parallelism": la.max_parallel or workers, "setup": list(la.setup),
                    "additional_parameters": {k.replace("_", "-"): v for k, v in la.sbatch.items()}}
    if la.partition:
        params["partition"] = la.partition
    if la.gpus_per_worker:
        params["gpus_per_node"] = la.gpus_per_worker
    if la.mem_gb:
        params["mem"] = f"{int(la.mem_gb)}GB" if la.mem_gb == int(la.mem_gb) else f"{int(la.mem_gb * 1024)}MB"
    return params


def sbatch_script(la: LauncherConfig, study: str, workers: int) -> str:
    """The sbatch file submitit writes for the array (its own template, the same call)."""
    from submitit.slurm.slurm import _make_sbatch_string

    folder = folder_of(la, study) / "%j"
    command = f"{sys.executable} -u -m submitit.core._submit {folder}"
    return _make_sbatch_string(command=command, folder=folder, map_count=workers,
                               **slurm_parameters(la, study, workers))


def _executor(la: LauncherConfig, study: str, workers: int):
    folder = folder_of(la, study) / "%j"
    if la.cluster == "local":
        ex = submitit.LocalExecutor(folder, max_num_timeout=la.max_requeues)
        ex.update_parameters(timeout_min=la.time_min, setup=list(la.setup))
        return ex
    ex = submitit.SlurmExecutor(folder, max_num_timeout=la.max_requeues)
    ex.update_parameters(**slurm_parameters(la, study, workers))
    return ex


class _Events:
    """What a worker reports, in a task with no parent to hear it: the job's log, and the trial
    it is running (for `checkpoint`)."""

    def __init__(self, owner: ArrayWorker) -> None:
        self.owner = owner

    def put(self, event) -> None:
        kind, _, payload = event
        if kind == "start":
            self.owner.current = payload[0]
            print(f"trial {payload[0]} started", flush=True)
        elif kind == "end":
            self.owner.current = None
            print(f"trial {payload.number} {payload.state} in {payload.seconds:.1f} s", flush=True)


class ArrayWorker(submitit.helpers.Checkpointable):
    """One array task: the worker loop until the study has nothing left, then the parent run
    closed if this was the last trial. Requeued by submitit after a time limit or preemption."""

    def __init__(self, job: WorkerJob) -> None:
        self.job = job
        self.current: int | None = None
        self.stop = threading.Event()
        self.preempted = False

    def __call__(self) -> str:
        """The worker loop. A preempted local task exits with the status that makes submitit's
        local executor start it again: submitit's signal handler exits with it by raising
        SystemExit wherever the main thread happens to be, and code there can swallow it (a
        finaliser running at that moment, for one: Python only prints "Exception ignored"); the
        worker then stops claiming trials, ends normally and is never started again (seen under
        load in the fault-grid test; which code swallowed it there was not pinned down). On
        SLURM the requeue is `scontrol requeue`, issued before that exit, so an ordinary end is
        fine there."""
        env = submitit.JobEnvironment()
        job = dataclasses.replace(self.job, job_id=env.job_id)
        worker_main(job, _Events(self), self.stop)
        if self.preempted and env.cluster == "local":
            sys.exit(LOCAL_REQUEUE_RETURN_CODE)
        _close_if_done(job)
        return env.job_id

    def checkpoint(self, *args, **kwargs) -> submitit.helpers.DelayedSubmission:
        """Called on the scheduler's warning signal: the running trial is failed and queued again
        (its worker is about to stop) and no further trial is claimed."""
        self.stop.set()
        self.preempted = True
        if self.current is not None:
            _fail_and_requeue(self.job, [self.current], "its job hit the time limit or was preempted; queued again")
        return submitit.helpers.DelayedSubmission(ArrayWorker(self.job))

    def __getstate__(self) -> dict:
        return {"job": self.job}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["job"])


def _open(job: WorkerJob):
    from ttt_lab.studies import storage as st

    storage = st.open_storage(job.storage_url)
    return storage, st.load(storage, job.spec, job.distributions), job.open_store()


def _fail_and_requeue(job: WorkerJob, numbers: list[int], why: str) -> list[int]:
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import requeue_trials
    from ttt_lab.studies.mutex import study_mutex
    from ttt_lab.studies.recovery import fail_trial

    storage, study, store = _open(job)
    with study_mutex(storage, job.storage_url, job.spec.name):
        trials = study.get_trials(deepcopy=False)
        failed = [n for n in numbers if trials[n].state == TrialState.RUNNING]
        for n in failed:
            fail_trial(study, storage, store, trials[n], why)
        return requeue_trials(study, failed, job.requeue_dead) if failed else []


def _close_if_done(job: WorkerJob) -> None:
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import count
    from ttt_lab.studies.parent_run import close_parent

    _, study, store = _open(job)
    if not count(study, TrialState.RUNNING, TrialState.WAITING):
        close_parent(study, store, job.parent_run_id)


def _record(folder: Path, la: LauncherConfig, jobs: list) -> None:
    path = folder / JOBS_FILE
    known = json.loads(path.read_text()) if path.is_file() else []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    known += [{"job_id": j.job_id, "cluster": la.cluster, "submitted": stamp} for j in jobs]
    path.write_text(json.dumps(known, indent=1))


def submit(jobs: list[WorkerJob], la: LauncherConfig, console: Console) -> list:
    """Submit one array task per worker job; their submitit jobs."""
    study = jobs[0].spec.name
    folder = folder_of(la, study)
    folder.mkdir(parents=True, exist_ok=True)
    ex = _executor(la, study, len(jobs))
    submitted = ex.submit_array([ArrayWorker(j) for j in jobs])
    _record(folder, la, submitted)
    ids = ", ".join(j.job_id for j in submitted)
    console.print(f"submitted {len(submitted)} worker(s) to {la.cluster}: job(s) {ids}; logs in {folder}",
                  highlight=False)
    return submitted


def job_state(cluster: str, folder: Path, job_id: str) -> str:
    """A job's state as the scheduler sees it (local jobs: whether their controller lives)."""
    if cluster == "local":
        from ttt_lab.studies.recovery import pid_alive

        if pid_alive(int(job_id)):
            return "RUNNING"
        return "FINISHED" if any((folder / job_id).glob("*_result.pkl")) else "ENDED"
    if shutil.which("sacct") is None:
        return "UNKNOWN (no sacct on this machine)"
    try:
        return submitit.SlurmJob(folder=folder / "%j", job_id=job_id).state
    except Exception as e:  # the scheduler's accounting may be unreachable; the trials table still shows
        return f"UNKNOWN ({type(e).__name__})"


def jobs_table(la: LauncherConfig, study: str) -> Table:
    folder = folder_of(la, study)
    path = folder / JOBS_FILE
    t = Table(title=f"jobs of study '{study}' ({folder})", title_justify="left")
    for col in ("job", "cluster", "submitted", "state"):
        t.add_column(col)
    for j in json.loads(path.read_text()) if path.is_file() else []:
        t.add_row(j["job_id"], j["cluster"], j["submitted"], job_state(j["cluster"], folder, j["job_id"]))
    return t


class _Follower:
    """`--wait`'s bookkeeping: which trials were printed, the tally, the jobs submitted."""

    def __init__(self, jobs: list, job: WorkerJob, la: LauncherConfig, console: Console) -> None:
        from ttt_lab.studies.pool import Tally

        self.jobs, self.job, self.la, self.console = list(jobs), job, la, console
        _, self.study, _ = _open(job)
        self.seen = {t.number for t in self.study.get_trials(deepcopy=False) if t.state.is_finished()}
        self.before = set(self.seen)
        self.tally, self.replacements, self.workers = Tally(), 0, len(jobs)

    def orphans(self, live: set[str]) -> None:
        """Fail and queue again the trials whose job ended under them."""
        from optuna.trial import TrialState

        ended = {j.job_id for j in self.jobs} - live
        orphans = [t.number for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                   if t.user_attrs.get("job") in ended]
        if orphans:
            requeued = _fail_and_requeue(self.job, orphans, "its job ended during the trial")
            self.console.print(f"[red]trial(s) {orphans}: their job ended; marked failed[/]"
                               + (f", queued again: {requeued}" if requeued else ""), highlight=False)

    def ended(self, advance: Callable[[], None]) -> None:
        from ttt_lab.studies.pool import COLOURS

        for t in self.study.get_trials(deepcopy=False):
            if t.state.is_finished() and t.number not in self.seen:
                self.seen.add(t.number)
                state = t.state.name
                self.tally.finished += state == "COMPLETE"
                self.tally.failed += state == "FAIL"
                self.tally.pruned += state == "PRUNED"
                vals = ", ".join(f"{v:.3f}" for v in t.values) if t.values else t.user_attrs.get("error", "")
                self.console.print(f"trial {t.number} [{COLOURS[state]}]{state}[/]  {vals}", highlight=False)
                advance()

    def finished(self) -> bool:
        """Every trial of the study ended: done, whatever the scheduler says of the jobs (a
        cluster without accounting cannot tell; the workers exit on their own)."""
        from optuna.trial import TrialState

        from ttt_lab.studies.enqueue import count

        return not count(self.study, TrialState.RUNNING, TrialState.WAITING) and len(self.seen) > len(self.before)

    def settled(self):
        """The tally, failed attempts that were run again not counted as failures."""
        from ttt_lab.studies.enqueue import retried

        trials = self.study.get_trials(deepcopy=False)
        self.tally.failed = sum(t.state.name == "FAIL" and not retried(trials, t) for t in trials
                                if t.number in self.seen - self.before)
        return self.tally

    def replace(self) -> bool:
        """Every job ended with trials still queued (their workers died): submit fresh workers,
        at most `launcher.max_requeues` times; whether any were."""
        from optuna.trial import TrialState

        from ttt_lab.studies.enqueue import count

        waiting = count(self.study, TrialState.WAITING)
        if not waiting or self.replacements >= self.la.max_requeues:
            return False
        self.replacements += 1
        self.console.print(f"every worker ended with {waiting} trial(s) queued: starting fresh worker(s)",
                           highlight=False)
        self.jobs += submit(worker_jobs(self.job, self.la, min(waiting, self.workers)), self.la, self.console)
        return True


def follow(jobs: list, job: WorkerJob, la: LauncherConfig, todo: int, console: Console):
    """`--wait`: print each trial as it ends, fail and queue again the trials of jobs that
    ended under them, replace workers that all died, until every job has ended; the tally."""
    from ttt_lab.progress import games_progress

    f = _Follower(jobs, job, la, console)
    with games_progress(console) as progress:
        task = progress.add_task(f"study {job.spec.name}", total=todo)
        while True:
            live = {j.job_id for j in f.jobs if not j.done()}
            f.orphans(live)
            f.ended(lambda: progress.advance(task, 1))
            if f.finished() or (not live and not f.replace()):
                if la.cluster == "local":  # the workers leave once no trial is left: return after them
                    while any(not j.done() for j in f.jobs):
                        time.sleep(la.poll_s)
                return f.settled()
            time.sleep(la.poll_s)


def worker_jobs(base: WorkerJob, la: LauncherConfig, workers: int) -> list[WorkerJob]:
    threads = la.cpus_per_worker if la.cluster == "slurm" else max(1, (os.cpu_count() or 1) // workers)
    return [dataclasses.replace(base, index=i, threads=threads, requeue_dead=la.max_requeues + 1)
            for i in range(workers)]


def show_status(spec, storage: str | None, la: LauncherConfig, console: Console) -> int:
    """`--status`: the study's trials (from the storage) and its launcher jobs (from the scheduler)."""
    import optuna

    from ttt_lab.config.load import load
    from ttt_lab.studies.storage import open_storage, storage_url
    from ttt_lab.studies.tables import summary_table

    url = storage_url(storage, load(spec.overrides).cfg.home)
    try:
        study = optuna.load_study(study_name=spec.name, storage=open_storage(url))
    except KeyError:
        raise StudyError(f"no study named '{spec.name}' in the storage {url.split('?')[0]} yet: run the sweep first "
                         "(the same arguments without --status), or pass --storage where it ran.") from None
    console.print(summary_table(study, spec))
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    console.print(", ".join(f"{states.count(s)} {s.lower()}" for s in sorted(set(states))) or "no trials yet",
                  highlight=False)
    if (folder_of(la, spec.name) / JOBS_FILE).is_file():
        console.print(jobs_table(la, spec.name))
    return 0
