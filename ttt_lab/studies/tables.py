"""The rich tables `ttt-lab sweep` prints: the plan (`--dry-run`), a search's space, the summary."""

from __future__ import annotations

from optuna.trial import TrialState
from rich.table import Table

from ttt_lab.studies.plan import Plan
from ttt_lab.studies.spec import StudySpec


def _done(states: set[TrialState]) -> str:
    if states & {TrialState.COMPLETE, TrialState.PRUNED}:
        return "yes"
    if TrialState.RUNNING in states:
        return "running"
    return "failed before" if TrialState.FAIL in states else "no"


def plan_table(plan: Plan, states: dict[str, set[TrialState]]) -> Table:
    t = Table(title=f"study '{plan.spec.name}': {len(plan.trials)} trials ({plan.spec.source})", title_justify="left")
    for col in ("trial", "overrides", "config hash", "done?"):
        t.add_column(col)
    for p in plan.trials:
        t.add_row(str(p.index), " ".join(p.overrides), p.config_hash, _done(states.get(p.config_hash, set())))
    return t


def search_table(plan: Plan) -> Table:
    t = Table(title=f"search '{plan.spec.name}': {plan.spec.n_trials} trials, sampler {plan.spec.sampler['name']}, "
              f"pruner {plan.spec.pruner['name']}", title_justify="left")
    t.add_column("parameter")
    t.add_column("distribution")
    for k, d in plan.distributions.items():
        t.add_row(k, repr(d))
    return t


def summary_table(study, spec: StudySpec) -> Table:
    t = Table(title=f"study '{spec.name}'", title_justify="left")
    for col in ("trial", "state", "overrides", *[o.metric for o in spec.objectives], "minutes"):
        t.add_column(col)
    for tr in study.get_trials(deepcopy=False):
        if tr.state == TrialState.WAITING:
            continue
        vals = [f"{v:.3f}" for v in tr.values] if tr.values else ["-"] * len(spec.objectives)
        mins = f"{tr.duration.total_seconds() / 60:.1f}" if tr.duration else "-"
        overrides = tr.user_attrs.get("overrides") or [f"{k}={v}" for k, v in tr.params.items()]
        t.add_row(str(tr.number), tr.state.name, " ".join(overrides), *vals, mins)
    return t
