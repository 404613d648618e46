"""Rates with honest intervals: Wilson over sampled games, the exact sign test, chi-square tails,
entropy, a Student-t mean over seeds, and sampled games pooled over seeds."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile: a two-sided 95 % interval."""


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (95 % by default; `z` is the normal
    quantile of another level); (0, 1) when n = 0. scipy's `binomtest(k, n).proportion_ci`
    gives exactly 0 at k = 0 and 1 at k = n, so an interval never cuts its own rate off."""
    if n == 0:
        return 0.0, 1.0
    from scipy.special import ndtr
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=float(2 * ndtr(z) - 1), method="wilson")
    return float(ci.low), float(ci.high)


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test: the probability, were both directions equally likely, of a
    split at least this uneven (ties left out). 1.0 when nothing differs. scipy's `binomtest`
    reads the tail from the binomial CDF, so 100,000 paired games cost no more than 100."""
    n = better + worse
    if n == 0:
        return 1.0
    from scipy.stats import binomtest

    return min(1.0, float(binomtest(better, n, 0.5).pvalue))


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with `df` degrees of freedom; 1.0 for x <= 0 or no
    degrees of freedom (nothing can be more extreme than no deviation)."""
    if df <= 0 or x <= 0:
        return 1.0
    from scipy.stats import chi2

    return float(chi2.sf(x, df))


def normalised_entropy(counts: list[int]) -> float:
    """Shannon entropy of `counts` divided by log(len(counts)): 1 for uniform, 0 for one outcome."""
    n = sum(counts)
    if n == 0 or len(counts) < 2:
        return 1.0
    h = -sum(c / n * math.log(c / n) for c in counts if c)
    return h / math.log(len(counts))


def mean_interval(values: list[float], bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """Mean and 95 % Student-t interval over seeds; (mean, mean, mean) for a single value.
    `bounds`: the values' range (0-1 for a rate), to which the interval is clipped: three seeds
    of a rate near 90 % give a t interval past 100 %, which no rate can reach."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return mean, lo, hi


RATE = re.compile(r"^(eval/[^/]+)/(win|draw|loss)_rate$")


@dataclass
class Pooled:
    successes: int
    games: int

    @property
    def rate(self) -> float:
        return self.successes / self.games if self.games else math.nan


def pooled(metrics: list[dict[str, float]], metric: str) -> Pooled | None:
    """A rate metric's sampled evaluation games pooled over seeds (each run's metrics); None when a
    run lacks its game count or the metric is no rate."""
    m = RATE.match(metric)
    if not m:
        return None
    k = n = 0
    for run in metrics:
        games = run.get(f"{m.group(1)}/games")
        if games is None or metric not in run:
            return None
        n += int(games)
        k += round(run[metric] * games)
    return Pooled(k, n) if n else None
