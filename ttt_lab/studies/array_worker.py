"""One task of the job array: the worker loop against the shared storage, its running trial
failed and queued again when the scheduler stops the task, the parent run closed after the last."""

from __future__ import annotations

import dataclasses
import sys
import threading

import submitit
from submitit.local.local import LOCAL_REQUEUE_RETURN_CODE

from ttt_lab.studies.worker import WorkerJob, worker_main


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
        close_if_done(job)
        return env.job_id

    def checkpoint(self, *args, **kwargs) -> submitit.helpers.DelayedSubmission:
        """Called on the scheduler's warning signal: the running trial is failed and queued again
        (its worker is about to stop) and no further trial is claimed."""
        self.stop.set()
        self.preempted = True
        if self.current is not None:
            fail_and_requeue(self.job, [self.current], "its job hit the time limit or was preempted; queued again")
        return submitit.helpers.DelayedSubmission(ArrayWorker(self.job))

    def __getstate__(self) -> dict:
        return {"job": self.job}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["job"])


def _open(job: WorkerJob):
    from ttt_lab.studies import storage as st

    storage = st.open_storage(job.storage_url)
    return storage, st.load(storage, job.spec, job.distributions), job.open_store()


def fail_and_requeue(job: WorkerJob, numbers: list[int], why: str) -> list[int]:
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


def close_if_done(job: WorkerJob) -> None:
    from optuna.trial import TrialState

    from ttt_lab.studies.enqueue import count
    from ttt_lab.studies.parent_run import close_parent

    _, study, store = _open(job)
    if not count(study, TrialState.RUNNING, TrialState.WAITING):
        close_parent(study, store, job.parent_run_id)

