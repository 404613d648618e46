"""The decision procedures as array programs over many studies at once (the calibration runs
thousands; a report runs one). Each endpoint has one rule here, and `decide` calls the same rule.

- **Probability of improvement** (the primary endpoint; `ttt_lab.stats.improvement`): per seed a
  score 1, 1/2 or 0 (the condition better, tied, worse). `improvement` decides *better on most
  seeds* (the confidence sequence's lower end above 1/2), *worse on most seeds*, *equivalent*
  (only with a declared delta > 0: inside 1/2 +- delta) or *unresolved*. `sign_test` is the fixed
  design's version: an exact two-sided binomial (sign) test of the better against the worse seeds
  at declared looks, Holm within a look, spending across looks.
- **Mean difference** (standardised to [-1, 1] by the objective's range, the margin with it):
  `mean` reads four decisions off one betting confidence sequence (`betting`): *differs* (the
  interval beyond the margin on one side), *differs, within the margin* (its direction shown, the
  interval inside the margin), *equivalent* (inside +-margin) or *unresolved*. Direction and
  magnitude come from the same sequence, so a claimed direction always agrees with the interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ttt_lab.stats import betting, improvement, spending

UNRESOLVED, EQUIVALENT, WITHIN, DIFFERS, BETTER, WORSE = 0, 1, 2, 3, 4, 5
NAMES = {UNRESOLVED: "unresolved", EQUIVALENT: "equivalent", WITHIN: "differs, within the margin",
         DIFFERS: "differs", BETTER: "better on most seeds", WORSE: "worse on most seeds"}


def magnitude_claims(x: np.ndarray, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per time, whether the sequence has shown the mean above / below -margin, 0 and +margin
    (last axis, in that order); `x` in [-1, 1] with the sample on the last axis."""
    points = np.array([(1 - margin) / 2, 0.5, (1 + margin) / 2])
    return betting.claims((x + 1) / 2, points, alpha)


def mean(x: np.ndarray, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The mean endpoint's decision and direction (+1, -1, 0) after every seed (shape x.shape), each
    comparison's sequence at `alpha` (the caller divides alpha among comparisons)."""
    above, below = magnitude_claims(x, margin, alpha)
    up, down = above[..., 1], below[..., 1]
    code = np.full(x.shape, UNRESOLVED, dtype=np.int8)
    code[above[..., 0] & below[..., 2]] = EQUIVALENT
    code[up & below[..., 2]] = WITHIN
    code[down & above[..., 0]] = WITHIN
    code[up & above[..., 2]] = DIFFERS
    code[down & below[..., 0]] = DIFFERS
    return code, np.where(up, 1, np.where(down, -1, 0)).astype(np.int8)


def improvement_codes(s: np.ndarray, alpha: float, delta: float = 0.0, *, out: np.ndarray | None = None
                      ) -> np.ndarray:
    """The probability of improvement's decision after every seed (shape s.shape), `s` the seeds'
    scores in {0, 1/2, 1}; `out`: their excluded cells where the caller has them already."""
    better, worse, within = improvement.claims_of(improvement.excluded(s, alpha) if out is None else out, delta)
    code = np.full(s.shape, UNRESOLVED, dtype=np.int8)
    code[within] = EQUIVALENT
    code[better] = BETTER
    code[worse] = WORSE
    return code


def holm_reject(p: np.ndarray, level: float) -> np.ndarray:
    """Holm's step-down over the last axis: sorted p_(i) is rejected while p_(j) <= level / (m - j)
    for every j <= i; the first failure stops it (what statsmodels' multipletests does)."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, -1)
    ok = np.logical_and.accumulate(ranked <= level / (m - np.arange(m)), axis=-1)
    out = np.empty_like(ok)
    np.put_along_axis(out, order, ok, -1)
    return out


def sign_p(better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """The exact two-sided sign test's p-value (ties left out), as scipy's binomtest gives it at
    1/2: twice the smaller binomial tail, at most 1; every value 2^(1-n) and up can be reached."""
    from scipy.stats import binom

    n = better + worse
    tail = binom.cdf(np.minimum(better, worse), n, 0.5)
    return np.where(n > 0, np.minimum(1.0, 2 * tail), 1.0)


def sign_test(s: np.ndarray, alpha: float, looks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The fixed design: decision and p-value at each declared look (shape s.shape[:-1] + (looks,)),
    `s` (..., comparisons, seeds) whose comparisons form the Holm family. A look's share of alpha
    is `spending.usable_shares`'; a direction once shown stays."""
    m = s.shape[-2]
    codes = np.zeros((*s.shape[:-1], len(looks)), dtype=np.int8)
    ps = np.ones(codes.shape)
    shown = np.zeros(s.shape[:-1], dtype=np.int8)
    for k, (n, share) in enumerate(zip(looks, spending.usable_shares(looks, alpha, m), strict=True)):
        p, reject, way = sign_look(s[..., :n], share)
        shown = np.where(reject & (shown == 0), way, shown).astype(np.int8)
        codes[..., k], ps[..., k] = shown, p
    return codes, ps


def sign_look(s: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One look of the fixed design over a family (the second-to-last axis of `s`, scores in
    {0, 1/2, 1}): each comparison's exact sign-test p, whether Holm at `share` rejects it, and the
    direction it would show (BETTER or WORSE)."""
    b, w = (s == 1).sum(-1), (s == 0).sum(-1)
    p = sign_p(b, w)
    reject = holm_reject(p, share) if share > 0 else np.zeros(p.shape, bool)
    return p, reject, np.where(b > w, BETTER, WORSE)
