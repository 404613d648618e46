"""The two decision procedures as array programs over many studies at once (the calibration runs
thousands; a report runs one). Differences are standardised to [-1, 1] (divided by the width of
the objective's range) and the margin with them.

Every comparison ends in one of four decisions, read off claims that each hold with the
procedure's error rate: the direction ("higher" / "lower": the mean difference is not 0) and the
magnitude (the confidence sequence's interval beyond the margin, or inside it).

- **differs**: the direction is shown and the interval lies beyond the margin on that side;
- **differs, within the margin**: the direction is shown and the interval lies inside the margin;
- **equivalent**: the interval lies inside ±margin;
- **unresolved**: anything else (the direction may be known while whether it matters is not).

`anytime` takes the direction from the same confidence sequence; `fixed` from exact sign-flip
tests at its declared looks (Holm step-down within a look, spending across looks)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ttt_lab.stats import betting, signflip, spending

UNRESOLVED, EQUIVALENT, WITHIN, DIFFERS = 0, 1, 2, 3
NAMES = {UNRESOLVED: "unresolved", EQUIVALENT: "equivalent", WITHIN: "differs, within the margin",
         DIFFERS: "differs"}


def magnitude_claims(x: np.ndarray, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per time, whether the sequence has shown the mean above / below -margin, 0 and +margin
    (last axis, in that order); `x` in [-1, 1] with the sample on the last axis."""
    points = np.array([(1 - margin) / 2, 0.5, (1 + margin) / 2])
    return betting.claims((x + 1) / 2, points, alpha)


def classify(direction: np.ndarray, above: np.ndarray, below: np.ndarray) -> np.ndarray:
    """The decision from a known direction (+1, -1 or 0) and the magnitude claims at one time."""
    up, down = direction > 0, direction < 0
    code = np.full(direction.shape, UNRESOLVED, dtype=np.int8)
    code[~up & ~down & above[..., 0] & below[..., 2]] = EQUIVALENT
    code[up & below[..., 2]] = WITHIN
    code[down & above[..., 0]] = WITHIN
    code[up & above[..., 2]] = DIFFERS
    code[down & below[..., 0]] = DIFFERS
    return code


def anytime(x: np.ndarray, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Decision and direction after every seed (shape x.shape), each comparison's sequence at `alpha`
    (the caller divides alpha among comparisons)."""
    above, below = magnitude_claims(x, margin, alpha)
    direction = np.where(above[..., 1], 1, np.where(below[..., 1], -1, 0)).astype(np.int8)
    return classify(direction, above, below), direction


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


def fixed(x: np.ndarray, margin: float, alpha: float, looks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Decision and direction at each declared look (shape x.shape[:-1] + (looks,)); `x` is
    (..., comparisons, seeds) and the comparisons of one study form the Holm family."""
    m = x.shape[-2]
    above, below = magnitude_claims(x, margin, alpha / m)
    direction = np.zeros(x.shape[:-1], dtype=np.int8)
    codes = np.zeros((*x.shape[:-1], len(looks)), dtype=np.int8)
    directions = np.zeros_like(codes)
    for k, (n, share) in enumerate(zip(looks, spending.shares(looks, alpha), strict=True)):
        part = x[..., :n]
        p = signflip.p_values(part.reshape(-1, n)).reshape(part.shape[:-1])
        shown = holm_reject(p, share) & (direction == 0)
        direction = np.where(shown, np.sign(part.sum(-1)).astype(np.int8), direction)
        codes[..., k] = classify(direction, above[..., n - 1, :], below[..., n - 1, :])
        directions[..., k] = direction
    return codes, directions
