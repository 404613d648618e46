"""`ttt-lab sweep --launcher slurm`: the study's workers as a SLURM job array through submitit.

Each array task runs the ordinary worker loop (`worker.worker_main`) against the shared
Optuna storage and tracking server, so nothing about claiming, recovery or tracking changes.
What a cluster adds is handled here: a task stopped by its time limit or a preemption
(submitit's USR2 signal) fails its trial, queues it again and is requeued by submitit
(`checkpoint`); a task killed outright leaves its trial to the other workers' recovery, which
queues it again (`WorkerJob.requeue_dead`); `--wait` follows the study and fails the trials
of tasks that ended under them. `launcher.cluster=local` runs the same path on this machine
through submitit's local executor (real processes). The array's sbatch settings are built in
`sbatch`, each task's loop runs in `array_worker`; submitting, following and status are here."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import submitit

from ttt_lab import events, log
from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.array_worker import ArrayWorker, _open, fail_and_requeue
from ttt_lab.studies.sbatch import executor, folder_of
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.worker import WorkerJob

JOBS_FILE = "jobs.json"

LOG = log.get("studies")


@dataclass(frozen=True)
class LaunchRequest:
    launcher: LauncherConfig
    wait: bool = False


def _record(folder: Path, la: LauncherConfig, jobs: list) -> None:
    path = folder / JOBS_FILE
    known = json.loads(path.read_text()) if path.is_file() else []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    known += [{"job_id": j.job_id, "cluster": la.cluster, "submitted": stamp} for j in jobs]
    path.write_text(json.dumps(known, indent=1))


def submit(jobs: list[WorkerJob], la: LauncherConfig) -> list:
    """Submit one array task per worker job; their submitit jobs."""
    study = jobs[0].spec.name
    folder = folder_of(la, study)
    folder.mkdir(parents=True, exist_ok=True)
    if la.cluster == "ray":
        from ttt_lab.studies import ray_launcher

        submitted = ray_launcher.submit(jobs, la)
    else:
        submitted = executor(la, study, len(jobs)).submit_array([ArrayWorker(j) for j in jobs])
    _record(folder, la, submitted)
    ids = ", ".join(j.job_id for j in submitted)
    LOG.info(f"submitted {len(submitted)} worker(s) to {la.cluster}: job(s) {ids}; logs in {folder}")
    return submitted


def job_state(cluster: str, folder: Path, job_id: str) -> str:
    """A job's state as the scheduler sees it (local jobs: whether their controller lives)."""
    if cluster == "ray":
        from ttt_lab.studies import ray_launcher

        try:
            ray_launcher.connect(LauncherConfig(cluster="ray"))
        except StudyError as e:
            return f"UNKNOWN ({e})"[:120]
        return "ENDED" if ray_launcher.RayJob(job_id).done() else "RUNNING"
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


def jobs_table(la: LauncherConfig, study: str) -> events.Table:
    folder = folder_of(la, study)
    path = folder / JOBS_FILE
    rows = tuple((j["job_id"], j["cluster"], j["submitted"], job_state(j["cluster"], folder, j["job_id"]))
                 for j in (json.loads(path.read_text()) if path.is_file() else []))
    return events.Table(f"jobs of study '{study}' ({folder})", ("job", "cluster", "submitted", "state"), rows)


class _Follower:
    """`--wait`'s bookkeeping: which trials were printed, the tally, the jobs submitted."""

    def __init__(self, jobs: list, job: WorkerJob, la: LauncherConfig) -> None:
        from ttt_lab.studies.pool import Tally

        self.jobs, self.job, self.la = list(jobs), job, la
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
            requeued = fail_and_requeue(self.job, orphans, "its job ended during the trial")
            LOG.warning(f"trial(s) {orphans}: their job ended; marked failed"
                        + (f", queued again: {requeued}" if requeued else ""))

    def ended(self, advance: Callable[[], None]) -> None:
        for t in self.study.get_trials(deepcopy=False):
            if t.state.is_finished() and t.number not in self.seen:
                self.seen.add(t.number)
                state = t.state.name
                self.tally.finished += state == "COMPLETE"
                self.tally.failed += state == "FAIL"
                self.tally.pruned += state == "PRUNED"
                vals = ", ".join(f"{v:.3f}" for v in t.values) if t.values else t.user_attrs.get("error", "")
                events.emit(events.TrialEnded(t.number, state, str(vals)))
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
        LOG.info(f"every worker ended with {waiting} trial(s) queued: starting fresh worker(s)")
        self.jobs += submit(worker_jobs(self.job, self.la, min(waiting, self.workers)), self.la)
        return True


def follow(jobs: list, job: WorkerJob, la: LauncherConfig, todo: int):
    """`--wait`: print each trial as it ends, fail and queue again the trials of jobs that
    ended under them, replace workers that all died, until every job has ended; the tally."""
    from ttt_lab.progress import games_progress

    f = _Follower(jobs, job, la)
    with games_progress(log.console()) as progress:
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
    threads = {"slurm": la.cpus_per_worker, "ray": max(1, int(la.cpus_per_trial))}.get(
        la.cluster, max(1, (os.cpu_count() or 1) // workers))
    return [dataclasses.replace(base, index=i, threads=threads, requeue_dead=la.max_requeues + 1)
            for i in range(workers)]
