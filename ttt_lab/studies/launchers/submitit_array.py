"""What the SLURM and local backends share: the workers as one submitit job array, one task per
worker. Each task runs the worker loop against the shared storage; a task stopped by its time
limit or a preemption (submitit's USR2 signal) fails its trial, queues it again and is requeued
by submitit (`ArrayWorker.checkpoint`); a task killed outright leaves its trial to the other
workers' recovery, which queues it again (`WorkerJob.requeue_dead`)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path

import submitit
from submitit.local.local import LOCAL_REQUEUE_RETURN_CODE

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.worker import JobLog, WorkerJob, fail_and_requeue, run_to_end


class ArrayWorker(submitit.helpers.Checkpointable):
    """One array task: the worker loop until the study has nothing left, then the parent run
    closed if this was the last trial. Requeued by submitit after a time limit or preemption;
    `requeue_by_exit`: by exiting with the status that makes submitit's local executor start it
    again (on SLURM the requeue is `scontrol requeue`, issued before that exit)."""

    def __init__(self, job: WorkerJob, requeue_by_exit: bool = False) -> None:
        self.job, self.requeue_by_exit = job, requeue_by_exit
        self.log = JobLog()
        self.stop = threading.Event()
        self.preempted = False

    def __call__(self) -> str:
        """The worker loop. A preempted task that requeues by exiting exits with that status
        here: submitit's signal handler exits by raising SystemExit wherever the main thread
        happens to be, and code there can swallow it (a finaliser running at that moment, for
        one: Python only prints "Exception ignored"); the worker would then stop claiming
        trials, end normally and never be started again (seen under load in the fault-grid
        test)."""
        env = submitit.JobEnvironment()
        run_to_end(dataclasses.replace(self.job, job_id=env.job_id), self.log, self.stop)
        if self.preempted and self.requeue_by_exit:
            sys.exit(LOCAL_REQUEUE_RETURN_CODE)
        return env.job_id

    def checkpoint(self, *args, **kwargs) -> submitit.helpers.DelayedSubmission:
        """Called on the scheduler's warning signal: the running trial is failed and queued again
        (its worker is about to stop) and no further trial is claimed."""
        self.stop.set()
        self.preempted = True
        if self.log.current is not None:
            fail_and_requeue(self.job, [self.log.current], "its job hit the time limit or was preempted; queued again")
        return submitit.helpers.DelayedSubmission(ArrayWorker(self.job, self.requeue_by_exit))

    def __getstate__(self) -> dict:
        return {"job": self.job, "requeue_by_exit": self.requeue_by_exit}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["job"], state["requeue_by_exit"])


class SubmititArray:
    """A backend whose workers are a submitit job array; `executor` says on what."""

    follow_to_exit = False
    requeue_by_exit = False

    def executor(self, la: LauncherConfig, study: str, workers: int, folder: Path) -> submitit.Executor:
        raise NotImplementedError

    def submit(self, jobs: list[WorkerJob], la: LauncherConfig, folder: Path) -> list:
        array = self.executor(la, jobs[0].spec.name, len(jobs), folder / "%j")
        return array.submit_array([ArrayWorker(j, self.requeue_by_exit) for j in jobs])

    def plan(self, la: LauncherConfig, study: str, workers: int) -> str | None:
        return None
