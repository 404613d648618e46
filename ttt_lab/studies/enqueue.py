"""Adding trials to a study: the grid points not yet done, and one retry per failed search
trial. Call under the study's mutex: reading the trials and adding to them is one step."""

from __future__ import annotations

from optuna.trial import TrialState

from ttt_lab.studies.plan import Plan

SETTLED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
"""States that count as a trial of the study: done, or about to be."""


def states_by_hash(study) -> dict[str, set[TrialState]]:
    out: dict[str, set[TrialState]] = {}
    for t in study.get_trials(deepcopy=False):
        h = t.user_attrs.get("config_hash")
        if h:
            out.setdefault(h, set()).add(t.state)
    return out


def enqueue_grid(study, plan: Plan) -> int:
    """Enqueue every grid point not finished, running or queued already; how many were."""
    by_hash = states_by_hash(study)
    n = 0
    for t in plan.trials:
        if by_hash.get(t.config_hash, set()) & set(SETTLED):
            continue
        grid_params = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in t.overrides}
        study.enqueue_trial(grid_params, user_attrs={"overrides": t.overrides, "config_hash": t.config_hash,
                                                     "grid_index": t.index, "grid_params": grid_params})
        n += 1
    return n


def requeue_failed(study) -> int:
    """A search re-runs each failed trial's parameters once more."""
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    n = 0
    for t in trials:
        if t.state == TrialState.FAIL and t.number not in retried and t.params:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
            n += 1
    return n


def count(study, *states: TrialState) -> int:
    return len(study.get_trials(deepcopy=False, states=states))
