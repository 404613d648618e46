"""Optuna samplers seeded per trial, so a search is reproducible and still spreads over workers.

A sampler seeded once per process draws the same sequence in every process that shares the
study: two machines (or a restart) would ask for the same parameters and train the same
configs. `TrialSeeded` reseeds its sampler from (the study's seed, the trial's number) before
each trial, so a trial's parameters depend only on the seed, its number and the trials
finished before it, whichever worker asks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from ttt_lab.studies.spec import StudySpec


def trial_seed(seed: int, number: int) -> int:
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


class TrialSeeded(BaseSampler):
    """Delegates to the sampler `build(seed)` makes, rebuilt for every trial from its number."""

    def __init__(self, build: Callable[[int | None], BaseSampler], seed: int | None) -> None:
        self._build, self._seed = build, seed
        self._inner = build(seed)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if self._seed is not None:
            self._inner = self._build(trial_seed(self._seed, trial.number))
        self._inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self._inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._inner.reseed_rng()


def sampler(spec: StudySpec, distributions: dict[str, Any] | None = None) -> BaseSampler:
    s = spec.sampler
    seed = None if s.get("seed") is None else int(s["seed"])

    def build(seed: int | None) -> BaseSampler:
        if s["name"] == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        if s["name"] == "grid":
            space = {k: list(v.choices) for k, v in (distributions or {}).items() if hasattr(v, "choices")}
            return optuna.samplers.GridSampler(space, seed=seed)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=int(s.get("n_startup_trials", 5)),
                                          multivariate=bool(s.get("multivariate", False)),
                                          constant_liar=bool(s.get("constant_liar", False)))

    return TrialSeeded(build, seed)
