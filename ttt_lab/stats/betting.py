"""A betting confidence sequence for the mean of bounded observations (Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 2024: the hedged capital process
with predictable plug-in bets, their Theorem 3). Valid at every sample size at once: the chance
that it ever excludes the true mean is at most alpha, however often it is looked at and whenever
sampling stops. Observations live in [0, 1]; callers map a difference in [-w, w] there.

The bets do not depend on the tested mean and each factor is nonincreasing in it, so the capital
for "mean above m" falls as m rises: the confidence set is an interval, and a claim such as
"mean > b" (all m <= b excluded at some time) errs only when the process at the true mean crossed
its threshold. Arrays broadcast: leading axes are independent studies, the last is the sample."""

from __future__ import annotations

import math

import numpy as np

TRUNCATION = 0.75
"""c in the paper: a bet never stakes more than c of what the tested mean leaves room for."""


def bets(y: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets lambda_t (eq. 26-27), each from observations before t."""
    n = y.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)
    var = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)
    before = np.concatenate([np.full((*y.shape[:-1], 1), 0.25), var[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(2 / alpha) / (before * t * np.log1p(t)))


def log_capital(y: np.ndarray, m: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Running maxima over time of log K+ (evidence that the mean exceeds m) and log K- (that it
    falls short), shape y.shape + m.shape[-1:]: the value at t is the most either reached by t."""
    lam = bets(y, alpha)[..., None]
    m = np.asarray(m, float)
    yy = y[..., None]
    up = np.minimum(lam, TRUNCATION / np.maximum(m, 1e-12))
    down = np.minimum(lam, TRUNCATION / np.maximum(1 - m, 1e-12))
    k_up = np.cumsum(np.log1p(up * (yy - m)), axis=-2)
    k_down = np.cumsum(np.log1p(-down * (yy - m)), axis=-2)
    return np.maximum.accumulate(k_up, axis=-2), np.maximum.accumulate(k_down, axis=-2)


def claims(y: np.ndarray, points: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """At each time, whether the sequence has shown the mean above / below each point (the hedged
    process with theta = 1/2: either side's capital reaching 2 / alpha)."""
    up, down = log_capital(y, points, alpha)
    bar = math.log(2 / alpha)
    return up >= bar, down >= bar


def interval(y: np.ndarray, alpha: float, grid: int = 4001) -> tuple[float, float]:
    """The confidence sequence after all of `y` (one study), as [lo, hi] in [0, 1]: the running
    intersection of every earlier interval. (0, 1) with no observations."""
    if len(y) == 0:
        return 0.0, 1.0
    ms = np.linspace(0.0, 1.0, grid)
    above, below = claims(np.asarray(y, float), ms, alpha)
    keep = ~(above[-1] | below[-1])
    if not keep.any():  # the grid is too coarse to hold the interval: the point between the claims
        edge = float(ms[np.argmax(~above[-1])]) if (~above[-1]).any() else 1.0
        return edge, edge
    inside = np.flatnonzero(keep)  # widened by a grid step: the ends lie between grid points
    return float(ms[max(inside[0] - 1, 0)]), float(ms[min(inside[-1] + 1, grid - 1)])
