"""The aggregates RL researchers expect (Agarwal et al., NeurIPS 2021, "Deep RL at the Edge of the
Statistical Precipice"): per condition the interquartile mean over seeds with a bootstrap 95 %
interval, the probability of improvement over the reference with its interval, and a performance
profile. The bootstrap is scipy's (`scipy.stats.bootstrap`, percentile intervals): rliable's
dependency `arch` does not import beside this project's pandas. With one task the stratified
bootstrap is a bootstrap over the runs; arms that ran the same seeds are resampled seed by seed
(paired). Below MIN_SEEDS seeds a percentile bootstrap covers far less than it says: no interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
MIN_SEEDS = 5


@dataclass(frozen=True)
class Aggregate:
    condition: str
    seeds: int
    iqm: float
    iqm_lo: float
    iqm_hi: float
    improvement: float
    """P(a run of this condition scores better than one of the reference: above when the objective
    is maximised, below when minimised), ties counting half; paired arms compare seed by seed."""
    improvement_lo: float
    improvement_hi: float


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    from scipy.stats import trim_mean

    return trim_mean(x, 0.25, axis=axis)


def _poi_unpaired(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    gt = (x[..., :, None] > y[..., None, :]).mean(axis=(-1, -2))
    eq = (x[..., :, None] == y[..., None, :]).mean(axis=(-1, -2))
    return gt + 0.5 * eq


def _poi_paired(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return (x > y).mean(axis=axis) + 0.5 * (x == y).mean(axis=axis)


def _interval(samples: tuple[np.ndarray, ...], statistic, seed: int, paired: bool = False) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval; none (nan) below MIN_SEEDS seeds; the point itself where
    the runs cannot vary."""
    from scipy.stats import bootstrap

    if any(len(s) < MIN_SEEDS for s in samples):
        return math.nan, math.nan
    if all(np.ptp(s) == 0 for s in samples):
        v = float(statistic(*samples))
        return v, v
    res = bootstrap(samples, statistic, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile",
                    vectorized=True, paired=paired, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def aggregates(by_cond: dict[str, dict[int, float]], reference: str, *, maximize: bool = True) -> list[Aggregate]:
    ref_values = by_cond.get(reference, {})
    sign = 1.0 if maximize else -1.0
    out = []
    for i, (cond, values) in enumerate(by_cond.items()):
        x = np.array(list(values.values()), float)
        iqm = float(_iqm(x))
        lo, hi = _interval((x,), _iqm, i)
        poi = plo = phi = math.nan
        if ref_values and cond != reference:
            common = sorted(set(values) & set(ref_values))
            paired = len(common) == len(values) == len(ref_values)
            a = sign * np.array([values[s] for s in common] if paired else list(values.values()), float)
            b = sign * np.array([ref_values[s] for s in common] if paired else list(ref_values.values()), float)
            stat = _poi_paired if paired else _poi_unpaired
            poi = float(stat(a, b))
            plo, phi = _interval((a, b), stat, 1000 + i, paired)
        out.append(Aggregate(cond, len(x), iqm, lo, hi, poi, plo, phi))
    return out


def profile(by_cond: dict[str, dict[int, float]], points: int = 51) -> dict[str, list[tuple[float, float, float,
                                                                                               float]]]:
    """Performance profiles: for each threshold tau in [0, 1], the share of a condition's runs
    scoring above tau (as (tau, share, share, share) for a band chart without a band)."""
    taus = np.linspace(0.0, 1.0, points)
    out = {}
    for cond, values in by_cond.items():
        x = np.array(list(values.values()), float)
        out[cond] = [(float(t), float(s), float(s), float(s)) for t, s in zip(taus, (x[:, None] > taus).mean(0),
                                                                                 strict=True)]
    return out
