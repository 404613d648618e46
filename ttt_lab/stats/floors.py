"""What a study of a given design can and cannot settle, known before its first trial: the
fewest seeds at which each decision becomes possible at all, even with no spread between seeds."""

from __future__ import annotations

import numpy as np

from ttt_lab.stats import rules, signflip, spending
from ttt_lab.stats.design import FIXED, Design

HORIZON = 4000


def without_spread(design: Design, comparisons: int, difference: float) -> int | None:
    """The fewest seeds after which every seed differing by exactly `difference` (no spread at all)
    is decided; None when not within HORIZON seeds."""
    x = np.full((1, HORIZON), difference / design.width)
    codes, _ = rules.anytime(x, design.standard_margin(), design.objective_alpha / max(1, comparisons))
    hit = np.flatnonzero(codes[0] != rules.UNRESOLVED)
    return int(hit[0]) + 1 if hit.size else None


def direction_floor(design: Design, comparisons: int) -> int | None:
    """fixed: the first declared look at which a sign-flip test can show a direction at all."""
    if design.procedure != FIXED:
        return None
    for n, share in zip(design.looks, spending.shares(design.looks, design.objective_alpha), strict=True):
        if signflip.floor(n) <= share / max(1, comparisons):
            return n
    return None


def sentence(design: Design, comparisons: int) -> str:
    eq = without_spread(design, comparisons, 0.0)
    big = without_spread(design, comparisons, 4 * design.margin)
    parts = [f"even with no spread between seeds, 'equivalent' needs {eq or f'more than {HORIZON}'} seeds per "
             f"condition and 'differs' (a difference of 4x the margin) {big or f'more than {HORIZON}'}"]
    if design.procedure == FIXED:
        floor = direction_floor(design, comparisons)
        parts.append(f"a direction can first be shown at look {floor}" if floor else
                     "no declared look has enough seeds for a sign-flip test to show a direction")
    return "; ".join(parts)
