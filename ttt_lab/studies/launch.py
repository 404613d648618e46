"""`ttt-lab sweep --launcher NAME`: the workers started by the named backend (`launchers`),
their jobs recorded beside the launch's files, and `--wait`: following the study until every
trial has ended, failing and queueing again the trials of jobs that ended under them, and
replacing workers that all died. Each worker runs the ordinary worker loop against the shared
Optuna storage and tracking server, so nothing about claiming, recovery or tracking changes."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ttt_lab import events, log
from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies import launchers
from ttt_lab.studies.launchers import Launcher, folder_of
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.worker import WorkerJob, fail_and_requeue, open_job

JOBS_FILE = "jobs.json"

LOG = log.get("studies")


@dataclass(frozen=True)
class LaunchRequest:
    launcher: LauncherConfig
    wait: bool = False

    @property
    def backend(self) -> Launcher:
        return launchers.get(self.launcher.cluster)


def _record(folder: Path, la: LauncherConfig, jobs: list) -> None:
    path = folder / JOBS_FILE
    known = json.loads(path.read_text()) if path.is_file() else []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    known += [{"job_id": j.job_id, "cluster": la.cluster, "submitted": stamp} for j in jobs]
    path.write_text(json.dumps(known, indent=1))


def submit(jobs: list[WorkerJob], la: LauncherConfig) -> list[launchers.Job]:
    """Start one worker per job through the launcher `launcher.cluster` names; its jobs."""
    folder = folder_of(la, jobs[0].spec.name)
    folder.mkdir(parents=True, exist_ok=True)
    submitted = launchers.get(la.cluster).submit(jobs, la, folder)
    _record(folder, la, submitted)
    ids = ", ".join(j.job_id for j in submitted)
    LOG.info(f"submitted {len(submitted)} worker(s) to {la.cluster}: job(s) {ids}; logs in {folder}")
    return submitted


def jobs_table(la: LauncherConfig, study: str) -> events.Table:
    """The study's recorded jobs, each with its state as its own launcher sees it."""
    folder = folder_of(la, study)
    path = folder / JOBS_FILE
    rows = tuple((j["job_id"], j["cluster"], j["submitted"], _state(la, j["cluster"], folder, j["job_id"]))
                 for j in (json.loads(path.read_text()) if path.is_file() else []))
    return events.Table(f"jobs of study '{study}' ({folder})", ("job", "cluster", "submitted", "state"), rows)


def _state(la: LauncherConfig, cluster: str, folder: Path, job_id: str) -> str:
    try:
        backend = launchers.get(cluster)
    except StudyError:
        return f"UNKNOWN (no launcher {cluster!r} here)"
    return backend.state(dataclasses.replace(la, cluster=cluster), folder, job_id)


class _Follower:
    """`--wait`'s bookkeeping: which trials were printed, the tally, the jobs submitted."""

    def __init__(self, jobs: list, job: WorkerJob, la: LauncherConfig) -> None:
        from ttt_lab.studies.pool import Tally

        self.jobs, self.job, self.la = list(jobs), job, la
        _, self.study, _ = open_job(job)
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
                if launchers.get(la.cluster).follow_to_exit:
                    while any(not j.done() for j in f.jobs):
                        time.sleep(la.poll_s)
                f.ended(lambda: progress.advance(task, 1))  # a trial that ended since the last count
                return f.settled()
            time.sleep(la.poll_s)


def worker_jobs(base: WorkerJob, la: LauncherConfig, workers: int) -> list[WorkerJob]:
    threads = launchers.get(la.cluster).threads(la, workers)
    return [dataclasses.replace(base, index=i, threads=threads, requeue_dead=la.max_requeues + 1)
            for i in range(workers)]
