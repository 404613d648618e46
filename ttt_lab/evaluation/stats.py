"""Rates with honest intervals."""

from __future__ import annotations

import math


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (95 % by default); (0, 1) when n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would cut the rate off
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test: the probability, were both directions equally likely, of a
    split at least this uneven (ties left out). 1.0 when nothing differs."""
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, j) for j in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with `df` degrees of freedom (regularised upper gamma)."""
    if df <= 0:
        return 1.0
    if x <= 0:
        return 1.0
    a, z = df / 2.0, x / 2.0
    log_prefix = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:
        term = total = 1.0 / a
        n = a
        while term > total * 1e-15:
            n += 1
            term *= z / n
            total += term
        return max(0.0, 1.0 - math.exp(log_prefix) * total)
    # Lentz's continued fraction for the upper tail.
    tiny = 1e-300
    b = z + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_prefix) * h)


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
