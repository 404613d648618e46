"""Worker processes: started once, each claims trials from the shared Optuna study until
none is left (grids: the enqueued points; searches: until n_trials, exactly), one at a time.
A worker reports what it does as `events.WorkerReport`s (a trial started, a trial ended, the
worker left) to whoever started it: `Reports` decodes them, whatever carried them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ttt_lab import events, log
from ttt_lab.studies.spec import StudySpec

WAITING_ONLY = "grid"
LOG = log.get("studies")


@dataclass
class WorkerJob:
    spec: StudySpec
    storage_url: str
    parent_run_id: str
    tracking_uri: str
    artifacts: str
    home: str
    index: int
    threads: int
    log_dir: str
    max_failures: int | None = None
    distributions: dict[str, Any] | None = None
    requeue_dead: int = 0
    """Attempts a trial gets when its worker dies (0: none here; `ttt-lab sweep` queues it again on
    its next call). Workers without a watching parent (a job array) queue dead workers' trials
    again themselves."""
    job_id: str = ""
    """The scheduler's id of this worker (a SLURM array task), recorded on each trial it runs."""
    outage_wait_s: float = 60.0
    """`tracking.outage_wait_s` of the study: how long a trial's run waits for a server that is down."""

    def open_store(self):
        """The tracking store as the study's tracking config names it."""
        from ttt_lab.tracking.store import open_store

        return open_store(self.tracking_uri, self.artifacts, self.home, self.outage_wait_s)


class ReportSink(Protocol):
    """Where a worker puts its reports: a `Reports`, or a multiprocessing queue its pool reads."""

    def put(self, report: events.WorkerReport) -> None: ...


class Reports:
    """A worker's reports, decoded in this one place: `put` calls the hook for each kind."""

    def put(self, report: events.WorkerReport) -> None:
        if isinstance(report, events.TrialStarted):
            self.started(report)
        elif isinstance(report, events.TrialEnded):
            self.ended(report)
        else:
            self.exited(report)

    def started(self, report: events.TrialStarted) -> None:
        pass

    def ended(self, report: events.TrialEnded) -> None:
        pass

    def exited(self, report: events.WorkerExited) -> None:
        pass


class JobLog(Reports):
    """A worker nobody listens to (a job array's task, a Ray actor): each trial a line of its
    job's log (`run_to_end` sends ttt-lab's lines there), and the trial it is running (failed
    and queued again when the job is stopped)."""

    def __init__(self) -> None:
        self.current: int | None = None

    def started(self, report: events.TrialStarted) -> None:
        self.current = report.number
        LOG.info(str(report))

    def ended(self, report: events.TrialEnded) -> None:
        self.current = None
        LOG.info(str(report))


def plan_job(plan, storage_url: str, parent_run_id: str, index: int, threads: int, log_dir: str,
             max_failures: int | None = None) -> WorkerJob:
    """The worker job of one of a study's workers (the process pool's and the launcher's)."""
    cfg = plan.base.cfg
    return WorkerJob(plan.spec, storage_url, parent_run_id, cfg.tracking.uri, cfg.tracking.artifacts,
                     str(Path(cfg.home).resolve()), index, threads, log_dir, max_failures, plan.distributions,
                     outage_wait_s=cfg.tracking.outage_wait_s)


def claim(spec: StudySpec, study, distributions: dict[str, Any] | None):
    """The next trial for this worker, or None when the study has nothing left to run. Call
    under the study's mutex: counting and asking are one step. `Study.ask` takes an enqueued
    trial first (a grid point, a retry); a search asks for a new one while under n_trials."""
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import SETTLED, count

    nothing_queued = not count(study, TrialState.WAITING)
    if nothing_queued and (spec.kind == WAITING_ONLY or count(study, *SETTLED) >= (spec.n_trials or 0)):
        return None
    return study.ask(fixed_distributions=distributions)


def trial_overrides(trial) -> list[str]:
    from ttt_lab.studies.space import to_overrides

    fixed = trial.user_attrs.get("overrides")
    if fixed is not None:
        # A grid point lives in its user attrs (grid_params), not as Optuna params: a categorical
        # parameter cannot gain values within a study, and --until-settled adds seeds to it.
        return list(fixed)
    return to_overrides(trial.params)


def worker_main(job: WorkerJob, reports: ReportSink, stop) -> None:
    """Entry point of a worker; puts its `events.WorkerReport`s to `reports` and claims no new
    trial once `stop` is set (the study hit --max-failures, or its job is being stopped)."""
    from ttt_lab import timing

    timing.own_process()  # its start-up is charged to the first trial it runs
    os.environ["TTT_LAB_HOME"] = job.home
    os.environ["TTT_LAB_TORCH_THREADS"] = str(job.threads)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    import optuna

    from ttt_lab.redact import redacted
    from ttt_lab.studies import storage as st
    from ttt_lab.studies.enqueue import requeue_trials
    from ttt_lab.studies.identity import host_identity
    from ttt_lab.studies.mutex import study_mutex
    from ttt_lab.studies.recovery import recover
    from ttt_lab.studies.trial import run_trial

    storage = st.open_storage(job.storage_url)
    study = st.load(storage, job.spec, job.distributions)
    store = job.open_store()
    failures = 0
    while not stop.is_set() and (job.max_failures is None or failures < job.max_failures):
        with study_mutex(storage, job.storage_url, job.spec.name):  # recover, count, ask, mark: one step
            dead = recover(study, storage, store)  # stale trials fail here too, as in Optuna's own optimize loop
            if dead and job.requeue_dead:
                requeue_trials(study, dead, job.requeue_dead)
            trial = claim(job.spec, study, job.distributions)
            if trial is not None:  # a worker that dies from here on leaves a trial recovery can see
                trial.set_user_attr("host", host_identity())
                trial.set_user_attr("pid", os.getpid())
                if job.job_id:
                    trial.set_user_attr("job", job.job_id)
                storage.record_heartbeat(st.trial_id(trial))
        if trial is None:
            break
        reports.put(events.TrialStarted(trial.number, job.index))
        try:
            overrides = trial_overrides(trial)
        except Exception as e:
            trial.set_user_attr("error", f"{type(e).__name__}: {e}")
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            reports.put(events.TrialEnded(trial.number, "FAIL", str(e), 0.0, job.index))
            failures += 1
            continue
        path = Path(job.log_dir) / f"trial-{trial.number}.log"
        with path.open("w") as f, log.to(redacted(f)):
            result = run_trial(job.spec, study, storage, trial, overrides, store, job.parent_run_id)
        failures += result.state == "FAIL"
        reports.put(result.report(job.index))
    reports.put(events.WorkerExited(job.index))


def open_job(job: WorkerJob):
    """The job's Optuna storage, its study and its tracking store."""
    from ttt_lab.studies import storage as st

    storage = st.open_storage(job.storage_url)
    return storage, st.load(storage, job.spec, job.distributions), job.open_store()


def fail_and_requeue(job: WorkerJob, numbers: list[int], why: str) -> list[int]:
    """Fail the trials among `numbers` still RUNNING (their worker is gone or going) and queue
    them again; the numbers of the new attempts."""
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import requeue_trials
    from ttt_lab.studies.mutex import study_mutex
    from ttt_lab.studies.recovery import fail_trial

    storage, study, store = open_job(job)
    with study_mutex(storage, job.storage_url, job.spec.name):
        trials = study.get_trials(deepcopy=False)
        failed = [n for n in numbers if trials[n].state == TrialState.RUNNING]
        for n in failed:
            fail_trial(study, storage, store, trials[n], why)
        return requeue_trials(study, failed, job.requeue_dead) if failed else []


def close_if_done(job: WorkerJob) -> None:
    """Close the study's parent run when no trial is left running or waiting (the last worker
    of a launch that nobody follows)."""
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import count
    from ttt_lab.studies.parent_run import close_parent

    _, study, store = open_job(job)
    if not count(study, TrialState.RUNNING, TrialState.WAITING):
        close_parent(study, store, job.parent_run_id)


def run_to_end(job: WorkerJob, reports: JobLog, stop) -> None:
    """A launched worker's whole life, its lines on its output (the job's log): the worker loop
    until the study has nothing left for it, then the parent run closed if its trial was the last."""
    import sys

    from ttt_lab.redact import redacted

    with log.to(redacted(sys.stdout)):
        worker_main(job, reports, stop)
        if not stop.is_set():
            close_if_done(job)
