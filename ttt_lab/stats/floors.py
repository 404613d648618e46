"""What a study of a given design can and cannot settle, known before its first trial: the fewest
seeds at which each decision becomes possible at all."""

from __future__ import annotations

import numpy as np

from ttt_lab.stats import improvement, rules, spending
from ttt_lab.stats.design import FIXED, Design

HORIZON = 4000


def without_spread(design: Design, comparisons: int, difference: float) -> int | None:
    """The mean endpoint: the fewest seeds after which every seed differing by exactly `difference`
    (no spread at all) is decided; None when not within HORIZON seeds."""
    x = np.full((1, HORIZON), difference / design.width)
    codes, _ = rules.mean(x, design.standard_margin(), design.mean_alpha / max(1, comparisons))
    hit = np.flatnonzero(codes[0] != rules.UNRESOLVED)
    return int(hit[0]) + 1 if hit.size else None


def agreeing(design: Design, comparisons: int) -> int | None:
    """The primary endpoint: the fewest seeds after which a comparison whose seeds all agree decides
    (fixed: the first declared look with a usable share whose sign test can reach it)."""
    level = design.improvement_alpha / max(1, comparisons)
    if design.procedure != FIXED:
        return improvement.agreeing_to_decide(level)
    shares = spending.usable_shares(design.looks, design.improvement_alpha, comparisons)
    return next((n for n, a in zip(design.looks, shares, strict=True)
                 if a > 0 and spending.floor(n) <= a / max(1, comparisons)), None)


def sentence(design: Design, comparisons: int) -> str:
    agree = agreeing(design, comparisons)
    eq = without_spread(design, comparisons, 0.0)
    big = without_spread(design, comparisons, 4 * design.margin)
    first = (f"a comparison whose seeds all agree is decided after {agree} seeds per condition" if agree else
             "no declared look has enough seeds to decide even a comparison whose seeds all agree")
    return (f"{first} (probability of improvement, {comparisons} comparison(s)); the mean difference, even with "
            f"no spread between seeds, needs {eq or f'more than {HORIZON}'} seeds for 'equivalent' and "
            f"{big or f'more than {HORIZON}'} for 'differs' by 4x the margin")
