"""The exact paired sign-flip permutation test: under the null that the two arms are alike, each
seed's difference is as likely to carry either sign, so the p-value is the share of the 2^n sign
patterns whose |sum| reaches the observed one. Distribution-free (it needs no shape, handles ties
and three-valued metrics), and it cannot go below 2^(1 - n): "differs" at alpha needs
n >= 1 + log2(1 / alpha) seeds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numpy as np

EXACT_UP_TO = 16
"""Seeds up to which every sign pattern is enumerated; above it, a fixed random sample of SAMPLED
patterns, counted as Monte Carlo permutation tests count (the observed one added). A sample
drawn afresh for each test would make that exact; one fixed sample makes it approximate."""
SAMPLED = 1 << 10
_TOL = 1e-9


def p_value(differences: Sequence[float]) -> float:
    """Two-sided exact p-value of one study's per-seed differences (scipy's permutation test)."""
    from scipy.stats import permutation_test

    d = np.asarray(differences, float)
    if len(d) < 2 or not np.any(d):
        return 1.0  # one seed: its flip reaches the same |sum|

    res = permutation_test((d,), np.mean, permutation_type="samples", alternative="two-sided",
                           n_resamples=np.inf if len(d) <= EXACT_UP_TO else SAMPLED, random_state=0)
    return float(res.pvalue)


def floor(n: int) -> float:
    """The smallest p-value n seeds can give."""
    return 2.0 ** (1 - n) if n > 0 else 1.0


def seeds_to_reach(level: float) -> int:
    """The fewest seeds whose smallest p-value is at most `level`."""
    return 1 + math.ceil(math.log2(1 / level)) if level > 0 else 10**9


@cache
def _signs(n: int) -> np.ndarray:
    if n <= EXACT_UP_TO:
        bits = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
    else:
        bits = np.random.default_rng(n).integers(0, 2, (SAMPLED, n))
    return (1 - 2 * bits).astype(float)


def p_values(d: np.ndarray, chunk: int = 256) -> np.ndarray:
    """The same p-value for many studies at once (rows of `d`), as the calibration needs it."""
    signs = _signs(d.shape[-1])
    out = np.empty(d.shape[0])
    for i in range(0, d.shape[0], chunk):
        part = d[i:i + chunk]
        observed = np.abs(part.sum(-1))
        flipped = np.abs(part @ signs.T)
        count = (flipped >= observed[:, None] * (1 - _TOL) - _TOL).sum(-1)
        out[i:i + chunk] = count / len(signs) if d.shape[-1] <= EXACT_UP_TO else (count + 1) / (len(signs) + 1)
    return out
