"""One trial in a worker: its config, its MLflow child run, training with pruning on the
periodic evaluation, the objective values told to Optuna, the state mirrored on the run."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ttt_lab import events, log, timing
from ttt_lab.studies.plan import AUDIT_PREFIX
from ttt_lab.studies.spec import StudySpec
from ttt_lab.studies.storage import HEARTBEAT_S, trial_id
from ttt_lab.tracking import keys

LOG = log.get("studies")


@dataclass
class TrialResult:
    number: int
    state: str
    values: list[float] | None
    seconds: float
    error: str | None = None
    run_id: str | None = None

    def report(self, worker: int | None = None) -> events.TrialEnded:
        """The trial's end as a worker reports it: its state, its objective values or its error."""
        detail = ", ".join(f"{v:.3f}" for v in self.values) if self.values else self.error or ""
        return events.TrialEnded(self.number, self.state, detail, self.seconds, worker)


def objective_values(spec: StudySpec, summaries: list, audited: dict[str, float] | None = None) -> list[float]:
    """The objectives from the final evaluation's summaries and the policy audit's metrics."""
    metrics: dict[str, float] = dict(audited or {})
    for s in summaries:
        metrics |= s.metrics("eval")
    missing = [o.metric for o in spec.objectives if o.metric not in metrics]
    if missing:
        raise KeyError(f"objective metric(s) {missing} not among the final metrics: {sorted(metrics)}")
    return [metrics[o.metric] for o in spec.objectives]


class Heartbeat:
    """Tells the storage every HEARTBEAT_S that this trial's worker is alive."""

    def __init__(self, storage, tid: int) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(storage, tid), daemon=True)
        self._thread.start()

    def _beat(self, storage, tid: int) -> None:
        while True:
            with contextlib.suppress(Exception):  # a transient database error must not kill the trial
                storage.record_heartbeat(tid)
            if self._stop.wait(HEARTBEAT_S):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def mark_worker(trial, overrides: list[str], config_hash: str) -> None:
    trial.set_user_attr("overrides", overrides)
    trial.set_user_attr("config_hash", config_hash)


class Outcome:
    """How a trial ended, told to Optuna and mirrored on its MLflow run by `settle`."""

    def __init__(self, trial) -> None:
        self.trial = trial
        self.run: Any = None
        """The trial's MLflow run (a `TrackedRun`) once opened."""
        self.values: list[float] | None = None
        self.result: TrialResult | None = None


@contextlib.contextmanager
def settle(study, trial, storage) -> Iterator[Outcome]:
    """Run a trial's body; whatever way it ends (values, pruned, an error) is told to Optuna
    once, tagged on its run and the run closed. A failing trial is recorded and the study
    goes on, so errors do not propagate; the heartbeat stops in every case."""
    import optuna

    start = time.perf_counter()
    beat = Heartbeat(storage, trial_id(trial))
    out = Outcome(trial)
    state, tags, error, status = "COMPLETE", {}, None, "FINISHED"
    try:
        yield out
    except optuna.TrialPruned as e:
        state, tags = "PRUNED", {keys.PRUNED: "true", keys.PRUNED_AT: str(e)}
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
        state, tags, status = "FAIL", {keys.ERROR: error[:5000]}, "FAILED"
        trial.set_user_attr("error", error[:2000])
        if out.run is not None:
            out.run.log_text(traceback.format_exc(), "error.txt")
    finally:
        beat.stop()
    if storage.get_trial(trial_id(trial)).state.is_finished():
        # failed from outside (its job was preempted: `submitit_array.ArrayWorker.checkpoint`), its run closed there
        out.result = TrialResult(trial.number, "FAIL", None, time.perf_counter() - start, "failed from outside")
        return
    if state == "COMPLETE":
        study.tell(trial, out.values)
    else:
        study.tell(trial, state=optuna.trial.TrialState[state])
    if out.run is not None:
        out.run.set_tags({keys.OPTUNA_STATE: state, **tags})
        out.run.end(status)
    out.result = TrialResult(trial.number, state, out.values if state == "COMPLETE" else None,
                             time.perf_counter() - start, error, run_id=out.run and out.run.run_id)


def audit_trial_policy(loaded, checkpoint: str, run) -> dict[str, float]:
    """The memorisation probe of the trial's final checkpoint, on the trial's own run: its
    metrics (`audit/policy/...`), its status as a tag, `audit/audit.json` as an artifact."""
    from ttt_lab.audit.run import checkpoint_policy_audit
    from ttt_lab.tracking import keys

    with timing.phase("audit"):
        audit = checkpoint_policy_audit(loaded, checkpoint)
    LOG.info(f"policy audit of {checkpoint}: {audit.status} ({audit.check('memorisation.gap').detail})")
    run.log_metrics(audit.metrics())
    run.set_tags({keys.POLICY_AUDIT: audit.status})
    run.log_text(audit.to_json(), "audit/audit.json")
    run.flush()
    return audit.metrics()


def open_trial_run(spec: StudySpec, trial, overrides: list[str], store, parent_run_id: str, loaded):
    """The trial's MLflow child run, with its config and provenance."""
    from ttt_lab.tracking.runs import open_run
    from ttt_lab.train.pipeline import log_config

    all_overrides = [*spec.overrides, *overrides]
    command = "ttt-lab train " + " ".join(shlex.quote(o) for o in all_overrides)
    tags = {keys.STUDY: spec.name, keys.TRIAL: str(trial.number), keys.TRIAL_OVERRIDES: " ".join(overrides),
            keys.OPTUNA_TRIAL_NUMBER: str(trial.number), keys.OPTUNA_STATE: "RUNNING",
            keys.WORKER: f"{socket.gethostname()}:{os.getpid()}"}
    run = open_run(store, spec.name, "trial", f"trial-{trial.number}", config_hash=loaded.config_hash,
                   seed=loaded.cfg.seed, overrides=all_overrides, command=command, tags=tags, tree=loaded.logged_tree,
                   parent_run_id=parent_run_id)
    log_config(run, loaded)
    trial.set_user_attr("mlflow_run_id", run.run_id)
    return run


def run_trial(spec: StudySpec, study, storage, trial, overrides: list[str], store, parent_run_id: str) -> TrialResult:
    import optuna

    from ttt_lab.config.load import load
    from ttt_lab.train.pipeline import train
    from ttt_lab.train.runtime import torch_threads

    clock = timing.Clock(already=timing.claim_start())
    with settle(study, trial, storage) as out, timing.running(clock):
        loaded = load([*spec.overrides, *overrides])
        mark_worker(trial, overrides, loaded.config_hash)
        torch_threads()
        out.run = open_trial_run(spec, trial, overrides, store, parent_run_id, loaded)

        def on_eval(step: int, summaries: list) -> None:
            if len(spec.objectives) != 1 or spec.objectives[0].metric.startswith(AUDIT_PREFIX):
                return  # pruning watches one objective, and an audit's exists only at the end
            trial.report(objective_values(spec, summaries)[0], step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {step}")

        result = train(loaded, run=out.run, on_eval=on_eval)
        audited = None
        if loaded.cfg.audit.policy.in_studies:
            audited = audit_trial_policy(loaded, str(result.checkpoint), out.run)
        out.values = values = objective_values(spec, result.final, audited)
        out.run.log_metrics({f"objective/{o.metric}": v for o, v in zip(spec.objectives, values, strict=True)})
        out.run.log_metrics(clock.metrics())
    assert out.result is not None  # `settle` sets it on the way out, however the trial ended
    return out.result
