"""Simulated studies for calibrating the procedures: each shape draws the per-seed objective of a
reference arm and of other arms whose true mean differs from it by a chosen amount. The shapes are
the ones this project's studies produce: Gaussian with a shared, an absent or an opposed seed
effect; exploitability's three values {0, 1/2, 1}; training that collapses or not (a mixture
fitted to the batch-size and curriculum findings); and the findings' own per-seed pairs resampled
(under the null, arm labels permuted within a seed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Draw = Callable[[np.random.Generator, int, int, int, float], np.ndarray]
"""(rng, studies, arms, seeds, true difference) -> values, shape (studies, arms, seeds); arm 0 is
the reference and every other arm differs from it by the true difference."""


@dataclass(frozen=True)
class Shape:
    name: str
    margin: float
    draw: Draw
    bounds: tuple[float, float] = (0.0, 1.0)


def gaussian(rho: float, sd: float = 0.05, centre: float = 0.85) -> Draw:
    """Per-seed values N(centre, sd) whose arms correlate by rho within a seed."""
    def draw(rng, studies, arms, seeds, delta):
        shared = rng.standard_normal((studies, 1, seeds))
        own = rng.standard_normal((studies, arms, seeds))
        if rho >= 0:
            z = np.sqrt(rho) * shared + np.sqrt(1 - rho) * own
        else:  # opposed: the reference moves against the others
            sign = np.where(np.arange(arms) == 0, -1.0, 1.0)[None, :, None]
            z = np.sqrt(-rho) * sign * shared + np.sqrt(1 + rho) * own
        return np.clip(centre + sd * z + _shift(arms, delta), 0, 1)
    return draw


def three_valued(rng, studies, arms, seeds, delta):
    """{0, 1/2, 1} with P(1/2) = 1/2 and the rest split to give mean 1/2 (reference) or 1/2 + delta."""
    p_one = 0.25 + _shift(arms, delta)[..., 0][None, :, None]
    u = rng.random((studies, arms, seeds))
    return np.where(u < 0.5, 0.5, np.where(u < 0.5 + p_one, 1.0, 0.0))


COLLAPSE = {"share": 0.45, "collapsed": (0.39, 0.072), "healthy": (0.85, 0.076)}
"""The draw-vs-optimal rate of 120 seeds of the batch-size and curriculum findings, split at 0.6:
the share below, and each mode's mean and spread."""


def collapsing(rng, studies, arms, seeds, delta):
    """A run collapses (low mode) or not; an arm better by delta collapses less often."""
    gap = COLLAPSE["healthy"][0] - COLLAPSE["collapsed"][0]
    share = COLLAPSE["share"] - _shift(arms, delta)[..., 0][None, :, None] / gap
    low = rng.random((studies, arms, seeds)) < share
    lo, hi = (rng.normal(*COLLAPSE[k], (studies, arms, seeds)) for k in ("collapsed", "healthy"))
    return np.clip(np.where(low, lo, hi), 0, 1)


def resampled(pairs: Sequence[tuple[float, float]]) -> Draw:
    """A finding's per-seed (arm, reference) values, seeds drawn with replacement. Under the null
    each seed's two values are swapped at random; otherwise the arm is the reference plus the
    finding's centred difference plus delta."""
    arr = np.asarray(pairs, float)

    def draw(rng, studies, arms, seeds, delta):
        if arms != 2:
            raise ValueError("a finding's pairs make two-arm studies")
        pick = arr[rng.integers(0, len(arr), (studies, seeds))]
        a, r = pick[..., 0], pick[..., 1]
        if delta == 0:
            swap = rng.random(a.shape) < 0.5
            a, r = np.where(swap, r, a), np.where(swap, a, r)
        else:
            centred = (a - r) - (arr[:, 0] - arr[:, 1]).mean()
            a = r + centred + delta
        return np.stack([r, a], 1)
    return draw


def _shift(arms: int, delta: float) -> np.ndarray:
    return np.where(np.arange(arms) == 0, 0.0, delta)[:, None]


def differences(values: np.ndarray, width: float) -> np.ndarray:
    """Each other arm minus the reference, standardised to [-1, 1]: (studies, arms - 1, seeds)."""
    return np.clip((values[:, 1:] - values[:, :1]) / width, -1, 1)
