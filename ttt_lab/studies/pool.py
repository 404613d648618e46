"""The workers of one `ttt-lab sweep` call: started once, watched until each exits.

Workers report `events.WorkerReport`s (through a queue, or straight from the worker in this
process), which `worker.Reports` decodes; the pool prints each trial as it ends, advances the
progress bar, stops claiming after --max-failures, and fails the trial of a worker that died
without saying so. One worker runs inside this process
(the same loop, no second interpreter to start: seconds saved per sweep); several run as
spawned processes."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optuna.trial import TrialState

from ttt_lab import events, log
from ttt_lab.studies.plan import Plan
from ttt_lab.studies.worker import Reports, WorkerJob, plan_job, worker_main

LOG = log.get("studies")


@dataclass
class Tally:
    finished: int = 0
    failed: int = 0
    pruned: int = 0
    died: int = 0
    """Workers that exited without saying so (killed, crashed)."""


@dataclass
class WorkerPool(Reports):
    plan: Plan
    storage: Any
    """The study's Optuna storage."""
    store: Any
    """The tracking store."""
    parent: str
    storage_url: str
    max_failures: int | None = None
    trial_timeout: float | None = None
    """Seconds a trial may run; past it its worker is killed (a hung or stopped process cannot stop
    itself), the trial failed and queued again, and a fresh worker takes its place."""
    tally: Tally = field(default_factory=Tally)

    def run(self, workers: int, todo: int, log_dir: Path) -> Tally:
        """Start `workers` (at most `todo`) processes, each trial's log in `log_dir`, and wait for
        every one to exit."""
        from ttt_lab.progress import games_progress

        workers = max(1, min(workers, todo))
        threads = max(1, (os.cpu_count() or 1) // workers)
        if os.environ.get("TTT_LAB_TORCH_THREADS"):  # a cap set by whoever started this sweep
            threads = min(threads, max(1, int(os.environ["TTT_LAB_TORCH_THREADS"])))
        self.running: dict[int, int] = {}
        self.started_at: dict[int, float] = {}
        self.exited_workers: set[int] = set()
        LOG.info(f"{workers} worker(s), {threads} torch thread(s) each; trial logs in {log_dir}")
        with games_progress(log.console()) as progress:
            self.progress, self.task = progress, progress.add_task(f"study {self.plan.spec.name}", total=todo)
            if workers == 1 and self.trial_timeout is None:
                self._inline(threads, log_dir)
                return self.tally
            ctx = mp.get_context("spawn")
            self.reports, self.stop = ctx.Queue(), ctx.Event()
            self.procs = {i: self._start(ctx, i, threads, log_dir) for i in range(workers)}
            while len(self.exited_workers) < len(self.procs):
                self._pump()
                for i, p in list(self.procs.items()):
                    if i not in self.exited_workers and not p.is_alive() and self.reports.empty():
                        self._died(i, p)
                    elif i not in self.exited_workers and self._overdue(i):
                        self._replace(ctx, i, threads, log_dir)
        for p in self.procs.values():
            p.join()
        return self.tally

    def _job(self, index: int, threads: int, log_dir: Path) -> WorkerJob:
        return plan_job(self.plan, self.storage_url, self.parent, index, threads, str(log_dir), self.max_failures)

    def _start(self, ctx, index: int, threads: int, log_dir: Path):
        proc = ctx.Process(target=worker_main, args=(self._job(index, threads, log_dir), self.reports, self.stop),
                           daemon=False)
        proc.start()
        return proc

    def _inline(self, threads: int, log_dir: Path) -> None:
        """The one worker in this process: it puts its reports to the pool itself."""
        self.stop = threading.Event()  # type: ignore[assignment]  # the same set/is_set as the processes' event
        worker_main(self._job(0, threads, log_dir), self, self.stop)

    def _pump(self) -> None:
        try:
            report = self.reports.get(timeout=0.5)
        except queue.Empty:
            return
        self.put(report)

    def started(self, report: events.TrialStarted) -> None:
        self.running[report.worker] = report.number
        self.started_at[report.worker] = time.monotonic()

    def exited(self, report: events.WorkerExited) -> None:
        self.exited_workers.add(report.worker)

    def ended(self, report: events.TrialEnded) -> None:
        if report.worker is not None:
            self.running.pop(report.worker, None)
        self.tally.finished += report.state == "COMPLETE"
        self.tally.pruned += report.state == "PRUNED"
        self.tally.failed += report.state == "FAIL"
        events.emit(dataclasses.replace(report, worker=None))
        self.progress.advance(self.task, 1)
        if self.max_failures is not None and self.tally.failed >= self.max_failures and not self.stop.is_set():
            LOG.warning(f"{self.tally.failed} failed trials: stopping (--max-failures {self.max_failures})")
            self.stop.set()

    def _overdue(self, index: int) -> bool:
        started = self.started_at.get(index)
        return (self.trial_timeout is not None and index in self.running and started is not None
                and time.monotonic() - started > self.trial_timeout)

    def _replace(self, ctx, index: int, threads: int, log_dir: Path) -> None:
        """Kill an overdue worker, fail and queue its trial again, start a fresh worker."""
        from ttt_lab.studies.enqueue import enqueue_grid, requeue_failed
        from ttt_lab.studies.mutex import study_mutex

        number, proc = self.running[index], self.procs[index]
        LOG.warning(f"trial {number} ran past --trial-timeout {self.trial_timeout:g} s: stopping its worker")
        proc.kill()
        proc.join()
        self._died(index, proc, f"ran past --trial-timeout {self.trial_timeout:g} s")
        import optuna

        study = optuna.load_study(study_name=self.plan.spec.name, storage=self.storage)
        with study_mutex(self.storage, self.storage_url, self.plan.spec.name):
            if self.plan.spec.kind == "grid":
                enqueue_grid(study, self.plan)
            else:
                requeue_failed(study)
        fresh = max(self.procs) + 1
        self.procs[fresh] = self._start(ctx, fresh, threads, log_dir)

    def _died(self, index: int, proc, why: str | None = None) -> None:
        import optuna

        from ttt_lab.studies.recovery import fail_trial

        self.exited_workers.add(index)
        self.tally.died += 1
        number = self.running.pop(index, None)
        LOG.warning(f"worker {index} died (exit code {proc.exitcode})"
                    + (f" during trial {number}; marked failed" if number is not None else ""))
        if number is None:
            return
        study = optuna.load_study(study_name=self.plan.spec.name, storage=self.storage)
        frozen = study.get_trials(deepcopy=False)[number]
        if frozen.state == TrialState.RUNNING:
            fail_trial(study, self.storage, self.store, frozen, why or f"worker died (exit code {proc.exitcode})")
        self.tally.failed += 1
