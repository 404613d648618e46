"""The study's one MLflow parent run: made by the first process (under the study's mutex),
found by the others, closed with the study's counts when a process is done with it."""

from __future__ import annotations

import dataclasses
import json

from optuna.trial import TrialState

from ttt_lab.studies.plan import Plan


def parent_run(study, store, plan: Plan, command: str) -> str:
    from ttt_lab.tracking import provenance
    from ttt_lab.tracking.store import TrackedRun

    spec = plan.spec
    run_id = study.user_attrs.get("mlflow_parent_run_id")
    if run_id:
        run = TrackedRun.reopen(store, run_id)
        if run is not None:
            return run.run_id
    tags = provenance.tags(plan.base.config_hash, plan.base.cfg.seed, command) | {
        "ttt.kind": "sweep", "ttt.study": spec.name, "ttt.study_kind": spec.kind, "ttt.study_source": spec.source,
        "ttt.question": spec.question, "ttt.objectives": json.dumps([o.__dict__ for o in spec.objectives]),
        "ttt.params": json.dumps(spec.params), "ttt.overrides": " ".join(spec.overrides)}
    run = TrackedRun(store, spec.name, name=spec.name, tags=tags)
    plan_rows = [{"trial": t.index, "overrides": t.overrides, "config_hash": t.config_hash} for t in plan.trials]
    run.log_text(json.dumps({"spec": dataclasses.asdict(spec), "trials": plan_rows}, indent=2), "plan.json")
    study.set_user_attr("mlflow_parent_run_id", run.run_id)
    return run.run_id


def close_parent(study, store, parent: str) -> None:
    """FINISHED when no trial is left running or waiting, else FAILED; the counts as tags."""
    from ttt_lab.tracking.store import terminate

    trials = study.get_trials(deepcopy=False)
    counts = {s: sum(t.state == s for t in trials) for s in TrialState}
    unfinished = counts[TrialState.RUNNING] + counts[TrialState.WAITING]
    terminate(store, parent, "FAILED" if unfinished else "FINISHED",
              {"ttt.trials_complete": str(counts[TrialState.COMPLETE]),
               "ttt.trials_failed": str(counts[TrialState.FAIL]), "ttt.trials_pruned": str(counts[TrialState.PRUNED])})
