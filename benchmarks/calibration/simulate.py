"""Simulated studies: each case draws the per-seed objective of a reference arm (arm 0) and of
other arms, as values of shape (studies, arms, seeds), and names the endpoints for which it is a
null (no true effect on that endpoint), so each endpoint's false decisions are counted against its
own nulls. The shapes are the ones this project's studies produce: Gaussian with a shared, an
absent or an opposed seed effect; exploitability's three values; trainings that collapse or not;
skewed pairs whose means agree while their probability of improvement does not, and the mirror
case; and the findings' own per-seed pairs resampled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

Draw = Callable[[np.random.Generator, int, int, int], np.ndarray]
IMPROVEMENT, MEAN, COLLAPSE = "improvement", "mean", "collapse"


@dataclass(frozen=True)
class Case:
    name: str
    draw: Draw
    nulls: tuple[str, ...]
    """The endpoints on which the arms do not differ (a decision there is an error)."""
    margin: float = 0.05
    bounds: tuple[float, float] = (0.0, 1.0)
    collapse_below: float | None = None
    """Declared (the collapse endpoint decided at 0.01 of alpha) or not."""
    delta: float = 0.0
    equivalence: tuple[str, ...] = ()
    """The endpoints whose truth sits exactly at the equivalence margin (an "equivalent" is an error)."""


def _stack(ref: np.ndarray, arm: Callable[[], np.ndarray], arms: int) -> np.ndarray:
    return np.stack([ref, *(arm() for _ in range(arms - 1))], 1)


def gaussian(rho: float, shift: float = 0.0, sd: float = 0.05, centre: float = 0.8) -> Draw:
    """Per-seed values N(centre, sd), the other arms shifted by `shift`, correlated by rho within a
    seed (opposed when rho < 0: the reference moves against the others)."""
    def draw(rng, studies, arms, seeds):
        shared = rng.standard_normal((studies, 1, seeds))
        own = rng.standard_normal((studies, arms, seeds))
        sign = np.where(np.arange(arms) == 0, -1.0 if rho < 0 else 1.0, 1.0)[None, :, None]
        z = np.sqrt(abs(rho)) * sign * shared + np.sqrt(1 - abs(rho)) * own
        return np.clip(centre + sd * z + np.where(np.arange(arms) == 0, 0.0, shift)[None, :, None], 0, 1)
    return draw


def three_valued(rng, studies, arms, seeds):
    """Exploitability's {0, 1/2, 1}, every arm alike: P(1/2) = 1/2, P(0) = P(1) = 1/4."""
    u = rng.random((studies, arms, seeds))
    return np.where(u < 0.5, 0.5, np.where(u < 0.75, 1.0, 0.0))


COLLAPSE_MODES = {"share": 0.45, "collapsed": (0.39, 0.072), "healthy": (0.85, 0.076)}
"""The draw-vs-optimal rate of 120 seeds of the batch-size and curriculum findings, split at 0.6:
the share below, and each mode's mean and spread."""


def bimodal(rng, studies, arms, seeds):
    """A training collapses (low mode) or not, every arm alike."""
    low = rng.random((studies, arms, seeds)) < COLLAPSE_MODES["share"]
    lo, hi = (rng.normal(*COLLAPSE_MODES[k], (studies, arms, seeds)) for k in ("collapsed", "healthy"))
    return np.clip(np.where(low, lo, hi), 0, 1)


def skewed_equal_means(rng, studies, arms, seeds):
    """The reference collapses on 20 % of seeds (0.40), else 0.85; the other arms never collapse but
    are 9 points worse when healthy (0.76): equal means, unequal probability of improvement (0.2)."""
    ref = np.where(rng.random((studies, seeds)) < 0.2, 0.40, 0.85) + rng.normal(0, 0.005, (studies, seeds))
    return _stack(ref, lambda: 0.76 + rng.normal(0, 0.005, (studies, seeds)), arms)


def mirror(rng, studies, arms, seeds):
    """Probability of improvement exactly 1/2 while the means differ: on half the seeds the arm is
    5 points better, on the other half 30 points worse."""
    ref = rng.uniform(0.5, 0.6, (studies, seeds))

    def arm():
        return ref + np.where(rng.random((studies, seeds)) < 0.5, 0.05, -0.30)
    return _stack(ref, arm, arms)


def signs(theta: float, gap: float = 0.1) -> Draw:
    """Each other arm better than the reference by `gap` on a seed with chance theta, else worse."""
    def draw(rng, studies, arms, seeds):
        ref = rng.uniform(0.4, 0.6, (studies, seeds))
        return _stack(ref, lambda: ref + np.where(rng.random((studies, seeds)) < theta, gap, -gap), arms)
    return draw


def independent(theta: float) -> Draw:
    """Independent seeds per arm, N(0, 1) and N(mu, 1) with P(arm > reference) = theta (what AdaStop
    assumes), mapped into [0, 1]."""
    mu = np.sqrt(2) * norm.ppf(theta)

    def draw(rng, studies, arms, seeds):
        x = rng.standard_normal((studies, arms, seeds)) + np.where(np.arange(arms) == 0, 0.0, mu)[None, :, None]
        return 0.5 + 0.1 * x
    return draw


def resampled(pairs: Sequence[tuple[float, float]], *, null: str = "") -> Draw:
    """A finding's per-seed (arm, reference) values, seeds drawn with replacement. null="swap": each
    seed's two values swapped at random (exchangeable arms); null="centred": the arm is the
    reference plus the finding's differences centred to zero mean; else as observed."""
    arr = np.asarray(pairs, float)

    def draw(rng, studies, arms, seeds):
        if arms != 2:
            raise ValueError("a finding's pairs make two-arm studies")
        pick = arr[rng.integers(0, len(arr), (studies, seeds))]
        a, r = pick[..., 0], pick[..., 1]
        if null == "swap":
            swap = rng.random(a.shape) < 0.5
            a, r = np.where(swap, r, a), np.where(swap, a, r)
        elif null == "centred":
            a = r + (a - r) - (arr[:, 0] - arr[:, 1]).mean()
        return np.stack([r, a], 1)
    return draw
