"""The aggregates RL researchers expect (Agarwal et al., NeurIPS 2021, "Deep RL at the Edge of the
Statistical Precipice"): per condition the interquartile mean over seeds with a bootstrap 95 %
interval, the probability of improvement over the reference with its interval, and a performance
profile. The bootstrap is scipy's (`scipy.stats.bootstrap`, percentile intervals): rliable's
dependency `arch` does not import beside this project's pandas. With one task the stratified
bootstrap is a bootstrap over the runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000


@dataclass(frozen=True)
class Aggregate:
    condition: str
    seeds: int
    iqm: float
    iqm_lo: float
    iqm_hi: float
    improvement: float
    """P(a run of this condition scores above one of the reference), ties counting half."""
    improvement_lo: float
    improvement_hi: float


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    from scipy.stats import trim_mean

    return trim_mean(x, 0.25, axis=axis)


def _poi(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    gt = (x[..., :, None] > y[..., None, :]).mean(axis=(-1, -2))
    eq = (x[..., :, None] == y[..., None, :]).mean(axis=(-1, -2))
    return gt + 0.5 * eq


def _interval(samples: tuple[np.ndarray, ...], statistic, seed: int) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval; the point itself where the runs cannot vary."""
    from scipy.stats import bootstrap

    if any(len(s) < 2 for s in samples) or all(np.ptp(s) == 0 for s in samples):
        v = float(statistic(*samples))
        return v, v
    res = bootstrap(samples, statistic, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile",
                    vectorized=True, paired=False, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def aggregates(by_cond: dict[str, dict[int, float]], reference: str) -> list[Aggregate]:
    ref = np.array(list(by_cond.get(reference, {}).values()), float)
    out = []
    for i, (cond, values) in enumerate(by_cond.items()):
        x = np.array(list(values.values()), float)
        iqm = float(_iqm(x))
        lo, hi = _interval((x,), _iqm, i)
        if len(ref) and cond != reference:
            poi = float(_poi(x, ref))
            plo, phi = _interval((x, ref), _poi, 1000 + i)
        else:
            poi = plo = phi = math.nan
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
