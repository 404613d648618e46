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


GRID_ATTRS = ("overrides", "config_hash", "grid_index", "grid_params")


def _attempts(trials, t) -> int:
    h = t.user_attrs.get("config_hash")
    if h is not None:
        return sum(x.user_attrs.get("config_hash") == h for x in trials)
    n, seen = 1, t
    while seen.user_attrs.get("retry_of") is not None:
        seen, n = trials[seen.user_attrs["retry_of"]], n + 1
    return n


def requeue_trials(study, numbers: list[int], max_attempts: int) -> list[int]:
    """Queue again the trials whose worker died (a grid point by its recorded overrides, a
    search trial by its parameters), each at most `max_attempts` times in all, none already
    done, running or queued; the numbers queued again."""
    trials = study.get_trials(deepcopy=False)
    by_hash = states_by_hash(study)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    out = []
    for n in numbers:
        t = trials[n]
        if t.state != TrialState.FAIL or _attempts(trials, t) >= max_attempts:
            continue
        h = t.user_attrs.get("config_hash")
        if h is not None and "grid_params" in t.user_attrs:
            if by_hash.get(h, set()) & set(SETTLED):
                continue
            study.enqueue_trial(t.user_attrs["grid_params"], user_attrs={k: t.user_attrs[k] for k in GRID_ATTRS})
            by_hash.setdefault(h, set()).add(TrialState.WAITING)
        elif t.params and n not in retried:
            study.enqueue_trial(t.params, user_attrs={"retry_of": n})
        else:
            continue
        out.append(n)
    return out


def retried(trials, t) -> bool:
    """Whether a later attempt of this trial's point (grid) or parameters (search) exists."""
    h = t.user_attrs.get("config_hash")
    if h is not None and "grid_params" in t.user_attrs:
        return any(x.number > t.number and x.user_attrs.get("config_hash") == h for x in trials)
    return any(x.user_attrs.get("retry_of") == t.number for x in trials)
