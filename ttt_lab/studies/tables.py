"""The tables a sweep reports, as data (`events.Table`): the plan (`--dry-run`), a search's space,
the summary of the trials."""

from __future__ import annotations

from optuna.trial import TrialState

from ttt_lab.events import Table
from ttt_lab.studies.plan import Plan
from ttt_lab.studies.spec import StudySpec


def _done(states: set[TrialState]) -> str:
    if states & {TrialState.COMPLETE, TrialState.PRUNED}:
        return "yes"
    if TrialState.RUNNING in states:
        return "running"
    return "failed before" if TrialState.FAIL in states else "no"


def plan_table(plan: Plan, states: dict[str, set[TrialState]]) -> Table:
    return Table(f"study '{plan.spec.name}': {len(plan.trials)} trials ({plan.spec.source})",
                 ("trial", "overrides", "config hash", "done?"),
                 tuple((str(p.index), " ".join(p.overrides), p.config_hash, _done(states.get(p.config_hash, set())))
                       for p in plan.trials))


def search_table(plan: Plan) -> Table:
    return Table(f"search '{plan.spec.name}': {plan.spec.n_trials} trials, sampler {plan.spec.sampler['name']}, "
                 f"pruner {plan.spec.pruner['name']}", ("parameter", "distribution"),
                 tuple((k, repr(d)) for k, d in plan.distributions.items()))


def summary_table(study, spec: StudySpec) -> Table:
    rows = []
    for tr in study.get_trials(deepcopy=False):
        if tr.state == TrialState.WAITING:
            continue
        vals = [f"{v:.3f}" for v in tr.values] if tr.values else ["-"] * len(spec.objectives)
        mins = f"{tr.duration.total_seconds() / 60:.1f}" if tr.duration else "-"
        overrides = tr.user_attrs.get("overrides") or [f"{k}={v}" for k, v in tr.params.items()]
        rows.append((str(tr.number), tr.state.name, " ".join(overrides), *vals, mins))
    return Table(f"study '{spec.name}'", ("trial", "state", "overrides", *[o.metric for o in spec.objectives],
                                          "minutes"), tuple(rows))
