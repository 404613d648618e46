"""The plan of a study, checked before anything runs: every grid trial's config composes
and validates (unknown keys, bad values), a search space is well formed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ttt_lab.config.load import Loaded, load
from ttt_lab.errors import TttLabError
from ttt_lab.studies import grid
from ttt_lab.studies.spec import StudyError, StudySpec

FINAL_PREFIXES = ("eval/random/", "eval/optimal/")


@dataclass
class PlannedTrial:
    index: int
    overrides: list[str]
    """The trial's own overrides (the study's fixed ones not repeated)."""
    config_hash: str


@dataclass
class Plan:
    spec: StudySpec
    base: Loaded
    """The study's fixed overrides alone: home, tracking and the search's base config."""
    trials: list[PlannedTrial] = field(default_factory=list)
    distributions: dict[str, Any] = field(default_factory=dict)


def _load(overrides: list[str], what: str) -> Loaded:
    try:
        loaded = load(overrides)
    except TttLabError as e:
        raise StudyError(f"{what}: {e}") from None
    if loaded.cfg.train.processes != 1:
        raise StudyError(f"{what}: train.processes={loaded.cfg.train.processes}, but a sweep trains each trial in "
                         "its worker's one process. Spread a study over processes with --workers (or machines, or "
                         "--launcher slurm) and keep train.processes=1.")
    return loaded


def _check_objectives(spec: StudySpec) -> None:
    for o in spec.objectives:
        if not o.metric.startswith(FINAL_PREFIXES):
            raise StudyError(f"objective metric {o.metric!r} is not a final evaluation metric; use one of "
                             "eval/random/… or eval/optimal/… (win_rate, draw_rate, loss_rate, invalid_rate, "
                             "format_rate, reward), e.g. eval/optimal/draw_rate.")


def make_plan(spec: StudySpec) -> Plan:
    _check_objectives(spec)
    base = _load(spec.overrides, "the study's fixed overrides")
    plan = Plan(spec, base)
    if spec.kind == "grid":
        for i, overrides in enumerate(grid.expand(spec)):
            loaded = _load(overrides, f"trial {i} ({' '.join(overrides[len(spec.overrides):])})")
            plan.trials.append(PlannedTrial(i, overrides[len(spec.overrides):], loaded.config_hash))
    else:
        from ttt_lab.studies.space import distributions

        plan.distributions = distributions(spec, base.tree)
    return plan
