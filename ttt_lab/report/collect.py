"""A study as the tracking store holds it: the parent run, each trial's child run, final
metrics and logged curves, grouped into conditions (a trial's overrides without its seed)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ttt_lab.errors import TttLabError
from ttt_lab.tracking import keys

Curve = list[tuple[int, float]]

FINAL_METRICS = (
    "eval/random/win_rate", "eval/random/draw_rate", "eval/random/loss_rate",
    "eval/optimal/win_rate", "eval/optimal/draw_rate", "eval/optimal/loss_rate",
    "eval/random/invalid_rate", "eval/optimal/invalid_rate", "eval/random/format_rate",
    "eval/optimal/format_rate", "eval/random/reward", "eval/optimal/reward",
)
CURVES = ("train/reward", "train/reward_std", "train/frac_reward_zero_std", "train/entropy",
          "train/game/invalid_per_game", "train/game/format_rate", "train/game/optimal_move_rate", "train/grad_norm",
          "eval/optimal/draw_rate")
PHASE = "train/phase"
"""The phase index of every logged step: stability rules compare within a phase, curves mark
where one phase ends and the next begins."""


class ReportError(TttLabError):
    pass


@dataclass
class Trial:
    run_id: str
    number: int
    status: str
    state: str
    overrides: list[str]
    condition: str
    seed: int
    batch_size: int
    metrics: dict[str, float]
    tags: dict[str, str]
    curves: dict[str, Curve] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.status == "FINISHED" and self.state == "COMPLETE"


@dataclass
class Study:
    name: str
    parent_id: str
    tags: dict[str, str]
    start_time: int
    trials: list[Trial]
    problems: list[str] = field(default_factory=list)
    """Why the report is partial (missing metrics, unfinished trials)."""
    policy_audits: dict[str, dict] = field(default_factory=dict)
    """Trial run id -> the `audit.json` of a policy audit of that trial's final checkpoint."""

    def conditions(self) -> dict[str, list[Trial]]:
        out: dict[str, list[Trial]] = {}
        for t in sorted(self.trials, key=lambda t: (natural_key(t.condition), t.seed)):
            if t.finished:
                out.setdefault(t.condition, []).append(t)
        return out


def natural_key(text: str) -> list:
    """Numbers compare as numbers: batch_size=64 before batch_size=128."""
    import re

    return [(0, float(part), "") if re.fullmatch(r"\d+(\.\d+)?", part) else (1, 0.0, part)
            for part in re.split(r"(\d+(?:\.\d+)?)", text) if part]


def condition_of(overrides: list[str]) -> str:
    kept = [o for o in overrides if not o.startswith("seed=")]
    return " ".join(kept) or "(baseline)"


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(float(text)) if text is not None else default
    except ValueError:
        return default


def trial_from_run(run, with_curves: bool, store) -> Trial:
    from ttt_lab.tracking.store import metric_history

    tags, params = run.data.tags, run.data.params
    overrides = tags.get(keys.TRIAL_OVERRIDES, "").split()
    t = Trial(run.info.run_id, _int(tags.get(keys.TRIAL), -1), run.info.status, tags.get(keys.OPTUNA_STATE, "?"),
              overrides, condition_of(overrides), _int(params.get("seed")),
              _int(params.get("train.phases.0.batch_size"), 1), dict(run.data.metrics), dict(tags),
              params=dict(params))
    if with_curves:
        t.curves = {k: metric_history(store, t.run_id, k) for k in (*CURVES, PHASE)}
    return t


def study_trials(store, study_or_run: str, with_curves: bool = True) -> tuple[str, Any, list[Trial]]:
    """(the study's name, its parent run, every trial run in trial order, unfinished ones included)."""
    from ttt_lab.tracking.store import child_runs, experiment_name, find_parent

    parent = find_parent(store, study_or_run)
    if parent is None:
        raise ReportError(f"No study '{study_or_run}' in the tracking store ({store.uri}): give a study name (the "
                          "MLflow experiment a `ttt-lab sweep` made) or its parent run id (with --set tracking.… "
                          "for another store); `ttt-lab runs list` shows runs.")
    name = experiment_name(store, parent.info.experiment_id)
    runs = [r for r in child_runs(store, name, parent.info.run_id)  # a condition's run holds its aggregates
            if r.data.tags.get(keys.KIND) != keys.CONDITION_KIND]
    return name, parent, sorted((trial_from_run(r, with_curves, store) for r in runs), key=lambda t: t.number)


def collect(store, study_or_run: str, with_curves: bool = True) -> Study:
    name, parent, trials = study_trials(store, study_or_run, with_curves)
    study = Study(name, parent.info.run_id, dict(parent.data.tags), parent.info.start_time, trials)
    finished = [t for t in trials if t.finished]
    if not finished:
        raise ReportError(f"The study '{name}' has no finished trial yet ({len(trials)} trial runs: "
                          f"{', '.join(sorted({t.state for t in trials})) or 'none'}). Run `ttt-lab sweep` for it "
                          "first; the report needs at least one finished trial.")
    study.policy_audits = policy_audits(store, finished)
    for t in trials:
        if not t.finished:
            study.problems.append(f"trial {t.number} ({' '.join(t.overrides)}) is {t.state.lower()}: left out")
        else:
            missing = [k for k in FINAL_METRICS if k not in t.metrics]
            if missing:
                study.problems.append(f"trial {t.number} lacks {', '.join(missing)}")
    return study


def policy_audits(store, trials: list[Trial]) -> dict[str, dict]:
    """Policy audits of the trials' final checkpoints: the one each trial ran itself, and any
    `ttt-lab audit policy player=hf model.path=CHECKPOINT` run since (found by the checkpoint
    path; the latest one per trial wins)."""
    import json

    from ttt_lab.tracking.store import read_text_artifact, search_all

    out: dict[str, dict] = {}
    for t in trials:  # a study trial audits its own checkpoint (audit.policy.in_studies)
        text = read_text_artifact(store, t.run_id, "audit/audit.json") if t.tags.get(keys.POLICY_AUDIT) else None
        if text:
            out[t.run_id] = json.loads(text)
    by_checkpoint = {t.tags[keys.CHECKPOINT]: t for t in trials if t.tags.get(keys.CHECKPOINT)}
    if not by_checkpoint:
        return out
    runs = search_all(store, "tags.`ttt.audit` = 'policy'")
    for run in sorted(runs, key=lambda r: r.info.start_time):
        trial = by_checkpoint.get(run.data.params.get("model.path", ""))
        text = read_text_artifact(store, run.info.run_id, "audit/audit.json") if trial else None
        if trial and text:
            out[trial.run_id] = json.loads(text)
    return out


def values(trials: list[Trial], key: str) -> list[float]:
    return [t.metrics[key] for t in trials if key in t.metrics and math.isfinite(t.metrics[key])]


def spec_of(study: Study) -> dict[str, Any]:
    import json

    out = {}
    for k in (keys.PARAMS, keys.OBJECTIVES):
        try:
            out[k] = json.loads(study.tags.get(k, "null"))
        except ValueError:
            out[k] = None
    return out
