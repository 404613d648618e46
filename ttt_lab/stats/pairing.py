"""Which runs of two conditions are compared with each other, and in what order."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

Values = Mapping
"""A condition's objective by seed, or by (block, seed)."""


def seed_of(key) -> int:
    """A run's seed: its key, or the seed of a (block, seed) key."""
    return key[1] if isinstance(key, tuple) else key


def differences(a: Values, b: Values) -> tuple[list[float], bool, list[int]]:
    """a minus b seed by seed over the seeds both ran (paired), else in seed order (unpaired);
    and each difference's seed. Blocked keys (block, seed) come seed by seed across the blocks, so
    the sequence only grows at its end when seeds are added."""
    common = sorted(set(a) & set(b), key=lambda k: (seed_of(k), str(k)))
    if common:
        return [a[s] - b[s] for s in common], True, [seed_of(s) for s in common]
    pairs = list(zip(sorted(a, key=seed_of), sorted(b, key=seed_of), strict=False))
    return [a[x] - b[y] for x, y in pairs], False, [seed_of(x) for x, _ in pairs]


def upto(seeds: Sequence[int], n: int) -> int:
    """How many of the differences (in order) belong to the first `n` distinct seeds."""
    seen: list[int] = []
    for i, s in enumerate(seeds):
        if s not in seen:
            if len(seen) == n:
                return i
            seen.append(s)
    return len(seeds)


def finite(d: dict[str, Any]) -> dict[str, Any]:
    """A record for JSON: a float that is not a number becomes None."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def padded(scores: Sequence) -> np.ndarray:
    """Score sequences of unequal length as one (comparisons, seeds) array, padded with ties (1/2),
    which a sign test leaves out."""
    n = max((len(s) for s in scores), default=0)
    return np.array([np.concatenate([np.asarray(s, float), np.full(n - len(s), 0.5)]) for s in scores]
                    ).reshape(len(scores), n)
