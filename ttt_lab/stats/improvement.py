"""The probability of improvement, theta = P(a seed's run of the condition scores better than the
reference's run on the same seed), ties counting half (the estimand of Agarwal et al. 2021), with
an anytime-valid confidence sequence.

Each seed scores s in {0, 1/2, 1}. For a tested theta = m, every bet 1 + lam (s - m) with
lam in [-1/(1 - m), 1/m] is a nonnegative martingale factor when the seeds' scores have mean m, so
a mixture of such bets is a test martingale and, by Ville's inequality, ever reaching 1/alpha has
chance at most alpha (Waudby-Smith & Ramdas 2024; Ramdas et al. 2023, "Game-theoretic statistics
and safe anytime-valid inference"). The mixture here bets a fixed fraction c of the room on either
side (up: lam = c / m, down: lam = -c / (1 - m)), c from FRACTIONS with WEIGHTS, half the weight on
each side: for a sign (no tie) and m = 1/2 it is the Bayes factor of a discrete prior on
P(better) at 1/2 + c/2 and 1/2 - c/2 against 1/2. The fractions put weight where the findings'
trainings lie (most seeds agree, or about 7 in 10 do): measured against the exact fixed-n sign
test in docs/benchmarks.md.

The up part of the evidence falls as m rises and the down part rises with it, so for a cell
[m1, m2] of tested values, up(m2) + down(m1) bounds the evidence at every m inside: a cell is
excluded only when that bound crossed, which keeps the claims exact on a grid. Arrays broadcast:
leading axes are independent studies, the last is the sample (seeds in order)."""

from __future__ import annotations

import math

import numpy as np

FRACTIONS = np.array([0.36, 0.5, 0.7, 0.94])
"""The bets' fractions c of the room; at m = 1/2 an alternative P(better) of (1 + c) / 2."""
WEIGHTS = np.array([3.0, 2.0, 1.0, 1.0]) / 7.0
CELLS = 100
"""Cells of width 1/CELLS over [0, 1] on which the confidence sequence is computed."""
_EDGE = 1e-12
VALUES = (0.0, 0.5, 1.0)
"""The scores a seed can take: worse, tied, better."""


def scores(differences: np.ndarray, *, tolerance: float = 1e-12) -> np.ndarray:
    """Per seed 1 (the condition better), 0 (worse) or 1/2 (a tie) from condition-minus-reference
    differences already signed so that larger is better."""
    d = np.asarray(differences, float)
    return np.where(d > tolerance, 1.0, np.where(d < -tolerance, 0.0, 0.5))


def _log_parts(s: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log of the up and the down mixture (each weighted, before the halving) after every seed,
    shape s.shape + m.shape. A score takes three values, so each bet's log capital is a count of
    each value times that value's log factor (one matrix product); capital past a float's range
    reads as infinite, which excludes the point as it should."""
    m = np.clip(np.asarray(m, float), _EDGE, 1 - _EDGE)[:, None]
    counts = np.cumsum(np.stack([s == v for v in VALUES], -1), axis=-2, dtype=float)
    flat = counts.reshape(-1, len(VALUES))
    c, shape = FRACTIONS, (*s.shape, m.shape[0])
    out = []
    for factor in (lambda v: c * (v / m - 1), lambda v: c * ((1 - v) / (1 - m) - 1)):
        logs = np.stack([np.log1p(factor(v)) for v in VALUES]).reshape(len(VALUES), -1)  # (value, point x bet)
        with np.errstate(over="ignore", divide="ignore"):
            capital = np.exp(flat @ logs).reshape(-1, m.shape[0], len(c)) @ WEIGHTS
            out.append(np.log(capital).reshape(shape))
    return out[0], out[1]


def excluded(s: np.ndarray, alpha: float, cells: int = CELLS) -> np.ndarray:
    """Per seed, whether each cell [k/cells, (k+1)/cells] of theta has been excluded by then (once
    excluded, always: the running maximum), shape s.shape + (cells,)."""
    edges = np.linspace(0.0, 1.0, cells + 1)
    up, down = _log_parts(np.asarray(s, float), edges)
    bound = np.logaddexp(up[..., 1:], down[..., :-1])  # up at the cell's right edge, down at its left
    return np.maximum.accumulate(bound, axis=-2) >= math.log(2 / alpha)


def interval(s: np.ndarray, alpha: float, cells: int = CELLS) -> tuple[float, float]:
    """The confidence sequence for theta after all of `s` (one study; scores in VALUES): the hull
    of the cells not excluded; (0, 1) before any seed."""
    if len(s) == 0:
        return 0.0, 1.0
    return interval_of(excluded(np.asarray(s, float), alpha, cells)[-1], float(np.mean(s)))


def interval_of(out: np.ndarray, share: float) -> tuple[float, float]:
    """The hull of the cells `out` (one time) leaves; `share`, the observed one, where it leaves none
    (within the sequence's chance alpha)."""
    cells = out.shape[-1]
    keep = np.flatnonzero(~out)
    if keep.size == 0:
        return share, share
    return keep[0] / cells, (keep[-1] + 1) / cells


def claims(s: np.ndarray, alpha: float, delta: float = 0.0, cells: int = CELLS
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed, whether it has been shown that theta > 1/2 (better on most seeds), theta < 1/2
    (worse on most seeds), and, where delta > 0, |theta - 1/2| < delta (neither better on more
    than 1/2 + delta of seeds)."""
    return claims_of(excluded(s, alpha, cells), delta)


def claims_of(out: np.ndarray, delta: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`claims` read off excluded cells (the last axis), so one sequence serves the interval and the decision."""
    cells = out.shape[-1]
    half = cells // 2
    better = np.asarray(out[..., :half].all(-1))
    worse = np.asarray(out[..., half:].all(-1))
    if delta <= 0:
        return better, worse, np.zeros_like(better)
    k = math.floor((0.5 - delta) * cells + 1e-9)
    j = math.ceil((0.5 + delta) * cells - 1e-9)
    return better, worse, np.asarray(out[..., :k].all(-1) & out[..., j:].all(-1))


def agreeing_to_decide(alpha: float, horizon: int = 400) -> int | None:
    """The fewest seeds after which a comparison whose seeds all agree is decided at `alpha`."""
    shown = claims(np.ones(horizon), alpha)[0]
    hit = np.flatnonzero(shown)
    return int(hit[0]) + 1 if hit.size else None
