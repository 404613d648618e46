"""The study's one MLflow parent run: made by the first process (under the study's mutex),
found by the others, closed with the study's counts when a process is done with it."""

from __future__ import annotations

import dataclasses
import json

from optuna.trial import TrialState

from ttt_lab.studies.plan import Plan
from ttt_lab.tracking import keys


def parent_run(study, store, plan: Plan, command: str) -> str:
    from ttt_lab.tracking.runs import open_run
    from ttt_lab.tracking.store import TrackedRun

    spec = plan.spec
    run_id = study.user_attrs.get("mlflow_parent_run_id")
    if run_id:
        run = TrackedRun.reopen(store, run_id)
        if run is not None:
            return run.run_id
    tags = study_tags(spec)
    run = open_run(store, spec.name, "sweep", spec.name, config_hash=plan.base.config_hash,
                   seed=plan.base.cfg.seed, overrides=spec.overrides, command=command, tags=tags)
    plan_rows = [{"trial": t.index, "overrides": t.overrides, "config_hash": t.config_hash} for t in plan.trials]
    run.log_text(json.dumps({"spec": dataclasses.asdict(spec), "trials": plan_rows}, indent=2), "plan.json")
    study.set_user_attr("mlflow_parent_run_id", run.run_id)
    return run.run_id


def study_tags(spec) -> dict[str, str]:
    """What a study's parent run says of it: the definition and how its comparisons are decided
    (the report reads these, from a live store or from a replay of results.csv)."""
    tags = {keys.STUDY: spec.name, keys.STUDY_KIND: spec.kind, keys.STUDY_SOURCE: spec.source,
            keys.QUESTION: spec.question, keys.OBJECTIVES: json.dumps([_said(o.__dict__) for o in spec.objectives]),
            keys.PARAMS: json.dumps(spec.params), keys.BASELINE: spec.baseline, keys.MARGIN: str(spec.margin),
            keys.PROCEDURE: spec.decisions, keys.MEAN_ALPHA: str(spec.mean_alpha), keys.DELTA: str(spec.delta)}
    if spec.bounds:
        tags[keys.BOUNDS] = ",".join(map(str, spec.bounds))
    if spec.blocks:
        tags[keys.BLOCKS] = json.dumps(spec.blocks)
    if spec.collapse_below is not None:
        tags |= {keys.COLLAPSE_BELOW: str(spec.collapse_below), keys.COLLAPSE_ALPHA: str(spec.collapse_alpha)}
    return tags


def close_parent(study, store, parent: str) -> None:
    """FINISHED when no trial is left running or waiting, else FAILED; the counts as tags."""
    from ttt_lab.tracking.store import terminate

    trials = study.get_trials(deepcopy=False)
    counts = {s: sum(t.state == s for t in trials) for s in TrialState}
    unfinished = counts[TrialState.RUNNING] + counts[TrialState.WAITING]
    terminate(store, parent, "FAILED" if unfinished else "FINISHED",
              {keys.TRIALS_COMPLETE: str(counts[TrialState.COMPLETE]),
               keys.TRIALS_FAILED: str(counts[TrialState.FAIL]), keys.TRIALS_PRUNED: str(counts[TrialState.PRUNED])})


def _said(objective: dict) -> dict:
    """An objective as the tag has always held it: `custom` only where declared."""
    return {k: v for k, v in objective.items() if k != "custom" or v}
