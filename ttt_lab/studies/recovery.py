"""Trials a dead worker left RUNNING: failed in Optuna and in MLflow so that they run again.

A worker in this host's boot and PID namespace (`identity.host_identity`) is dead when its
process is; a worker elsewhere (another machine, another container with the same hostname)
when its heartbeat is older than the storage's grace period (Optuna's own stale-trial rule).
Every sweep start and every worker, before each claim, runs this."""

from __future__ import annotations

import os

from optuna.trial import FrozenTrial, TrialState

from ttt_lab.studies.identity import host_identity
from ttt_lab.tracking import keys


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_trial(study, storage, store, frozen: FrozenTrial, why: str) -> None:
    """Mark one RUNNING trial failed in Optuna and its child run failed in MLflow."""
    from ttt_lab.tracking.store import terminate

    tid = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name),
                                                          frozen.number)
    storage.set_trial_user_attr(tid, "error", why)
    storage.set_trial_state_values(tid, TrialState.FAIL)
    run_id = frozen.user_attrs.get("mlflow_run_id")
    if run_id:
        terminate(store, run_id, "FAILED", {keys.OPTUNA_STATE: "FAIL", keys.ERROR: why})


def recover(study, storage, store) -> list[int]:
    """Fail the trials of dead workers (this host's by process id, others' by heartbeat) and
    close the MLflow runs of failed trials; the numbers of the trials failed now."""
    import optuna

    from ttt_lab.tracking.store import run_status, terminate

    host = host_identity()
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = t.user_attrs.get("pid")
        if t.user_attrs.get("host") == host and isinstance(pid, int) and not pid_alive(pid):
            fail_trial(study, storage, store, t, f"worker {host} pid {pid} died during the trial")
            failed.append(t.number)
    failed += optuna.storages.fail_stale_trials(study) or []
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        run_id = t.user_attrs.get("mlflow_run_id")
        # Only Optuna's stale-trial rule fails a trial without saying why (no "error"), and leaves
        # its MLflow run open: every other path closed the run itself. Workers call this before each
        # claim, so it must not look up every failed trial's run.
        if run_id and "error" not in t.user_attrs and run_status(store, run_id) == "RUNNING":
            terminate(store, run_id, "FAILED", {keys.OPTUNA_STATE: "FAIL", keys.ERROR: "worker stopped heartbeating"})
    return sorted(set(failed))
