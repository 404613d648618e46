"""The plan of a study, checked before anything runs: every grid trial's config composes
and validates (unknown keys, bad values), a search space is well formed. One command composes
each config once (`Composer`): the launcher, the runner and every look of --until-settled are
handed the plan, and a look's plan composes only its new seeds' configs."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

from ttt_lab.config.load import Loaded, load
from ttt_lab.errors import TttLabError
from ttt_lab.evaluation.metric_names import AUDIT_PREFIX
from ttt_lab.studies import estimate, grid
from ttt_lab.studies.spec import StudyError, StudySpec

EXPLOITER_PREFIXES = ("eval/exploiter/", "eval/exploitability")
"""An objective read off the policy audit of each trial's final checkpoint (AUDIT_PREFIX, e.g. the
memorisation gap, `audit/policy/memorisation.gap`): the trials must audit themselves."""


@dataclass
class PlannedTrial:
    index: int
    overrides: list[str]
    """The trial's own overrides (the study's fixed ones not repeated)."""
    config_hash: str
    seconds: float = 0.0
    """Its wall time, its warm-up aside, estimated from the games it plays (`studies.estimate`)."""
    warm_up: tuple[str, float] = ("", 0.0)
    """Its warm-up's identity and time (`estimate.warm_up`): trials sharing one pay it once."""


class Composer:
    """The configs one command composed, by their overrides: each is composed once, and so is
    the tree their short names are resolved on (trials that differ in short names share it)."""

    def __init__(self) -> None:
        self.done: dict[tuple[str, ...], Loaded] = {}
        self.plain_trees: dict[tuple[str, ...], dict[str, Any]] = {}

    def __call__(self, overrides: list[str]) -> Loaded:
        key = tuple(overrides)
        if key not in self.done:
            self.done[key] = load(list(overrides), plain_trees=self.plain_trees)
        return self.done[key]


@dataclass
class Plan:
    spec: StudySpec
    base: Loaded
    """The study's fixed overrides alone: home, tracking and the search's base config."""
    trials: list[PlannedTrial] = field(default_factory=list)
    distributions: dict[str, Any] = field(default_factory=dict)
    compose: Composer = field(default_factory=Composer, repr=False)

    def replan(self, spec: StudySpec) -> Plan:
        """The plan of `spec` (this study with other seeds), reusing the configs composed so far."""
        return make_plan(spec, self.compose)


def _load(overrides: list[str], what: str, compose: Composer) -> Loaded:
    try:
        loaded = compose(overrides)
    except TttLabError as e:
        raise StudyError(f"{what}: {e}") from None
    if loaded.cfg.train.processes != 1:
        raise StudyError(f"{what}: train.processes={loaded.cfg.train.processes}, but a sweep trains each trial in "
                         "its worker's one process. Spread a study over processes with --workers (or machines, or "
                         "--launcher slurm) and keep train.processes=1.")
    return loaded


def _check_objectives(spec: StudySpec) -> None:
    """Each objective names a metric a trial logs (or one declared custom)."""
    from ttt_lab.studies.checks import check_objectives

    check_objectives(spec)


def _check_audited(spec: StudySpec, loaded: Loaded, what: str) -> None:
    """An audit objective needs every trial to run its policy audit."""
    audited = [o.metric for o in spec.objectives if o.metric.startswith(AUDIT_PREFIX)]
    if audited and not loaded.cfg.audit.policy.in_studies:
        raise StudyError(f"{what}: the objective {audited[0]} comes from the policy audit of each trial's final "
                         "checkpoint, but audit.policy.in_studies=false turns that audit off. Add "
                         "audit.policy.in_studies=true to the study's overrides, or choose an eval/… objective.")


def _check_exact(spec: StudySpec, loaded: Loaded, what: str) -> None:
    """The best response's metrics exist only where the final evaluation walks the game tree."""
    exploiter = [o.metric for o in spec.objectives if o.metric.startswith(EXPLOITER_PREFIXES)]
    if exploiter and loaded.cfg.eval.mode == "sampled":
        raise StudyError(f"{what}: the objective {exploiter[0]} is the best response's, which only an exact "
                         "evaluation computes, but eval.mode=sampled. Drop eval.mode=sampled (auto walks the tree "
                         "for a greedy model), or choose an eval/random/… or eval/optimal/… objective.")


def with_default_seeds(spec: StudySpec, seeds: int | None, device: str = "cpu") -> StudySpec:
    """A command-line grid that names no seeds (neither swept nor fixed) compares its conditions
    over seeds all the same: with one swept key its first value is the baseline (declared by the
    order the user typed, before any data), which makes the family k - 1 comparisons instead of
    every pair, and it runs seeds 0..n-1: `seeds` (the config's study.seeds), or, when None, the
    seeds after which a comparison whose seeds all agree decides. On a CPU it runs one worker a
    core (up to 8; --workers sets another number), as a small model gains little from a second
    thread. Other specs come back as given."""
    from ttt_lab.stats.design import Design
    from ttt_lab.stats.floors import agreeing

    named = "seed" in spec.params or any(o.startswith(("seed=", "+seed=", "++seed=")) for o in spec.overrides)
    if spec.source != "command line" or spec.kind != "grid" or named or seeds == 1:
        return spec
    swept = {k: grid.values(k, e) for k, e in spec.params.items()}
    k = math.prod(len(v) for v in swept.values())
    if k < 2:
        return spec
    baseline = spec.baseline or (f"{next(iter(swept))}={next(iter(swept.values()))[0]}" if len(swept) == 1 else "")
    n = seeds or agreeing(Design(), k - 1 if baseline else k * (k - 1) // 2) or 2
    workers = min(os.cpu_count() or 1, 8, k * n) if device == "cpu" and spec.workers == 1 else spec.workers
    return dataclasses.replace(spec, params={**spec.params, "seed": ",".join(map(str, range(n)))}, baseline=baseline,
                               default_seeds=True, workers=workers)


def make_plan(spec: StudySpec, compose: Composer | None = None) -> Plan:
    compose = compose or Composer()
    _check_objectives(spec)
    base = _load(spec.overrides, "the study's fixed overrides", compose)
    spec = with_default_seeds(spec, base.cfg.study.seeds, base.cfg.model.device)
    _check_audited(spec, base, "the study's fixed overrides")
    _check_exact(spec, base, "the study's fixed overrides")
    plan = Plan(spec, base, compose=compose)
    if spec.kind == "grid":
        for i, overrides in enumerate(grid.expand(spec)):
            what = f"trial {i} ({' '.join(overrides[len(spec.overrides):])})"
            loaded = _load(overrides, what, compose)
            _check_audited(spec, loaded, what)
            _check_exact(spec, loaded, what)
            plan.trials.append(PlannedTrial(i, overrides[len(spec.overrides):], loaded.config_hash,
                                            estimate.trial_seconds(loaded.cfg), estimate.warm_up(loaded.cfg)))
    else:
        from ttt_lab.studies.space import distributions

        plan.distributions = distributions(spec, base.tree)
    return plan
