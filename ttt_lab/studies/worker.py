"""Worker processes: started once, each claims trials from the shared Optuna study until
none is left (grids: the enqueued points; searches: until n_trials, exactly), one at a time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ttt_lab.studies.spec import StudySpec

WAITING_ONLY = "grid"


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


def worker_main(job: WorkerJob, events, stop) -> None:
    """Entry point of a spawned worker; reports ('start'|'end'|'exit', …) events to the parent
    and claims no new trial once `stop` is set (the study hit --max-failures)."""
    from ttt_lab import log, timing

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
    from ttt_lab.studies.trial import TrialResult, run_trial

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
        events.put(("start", job.index, (trial.number,)))
        try:
            overrides = trial_overrides(trial)
        except Exception as e:
            trial.set_user_attr("error", f"{type(e).__name__}: {e}")
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            events.put(("end", job.index, TrialResult(trial.number, "FAIL", None, 0.0, str(e))))
            failures += 1
            continue
        path = Path(job.log_dir) / f"trial-{trial.number}.log"
        with path.open("w") as f, log.to(redacted(f)):
            result = run_trial(job.spec, study, storage, trial, overrides, store, job.parent_run_id)
        failures += result.state == "FAIL"
        events.put(("end", job.index, result))
    events.put(("exit", job.index, None))
