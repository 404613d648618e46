"""How numbers are written for people: one percentage format for every table and page."""

from __future__ import annotations

import math


def pct(rate: float) -> str:
    """A rate (0-1) as percent with one decimal, no sign: `0.875` -> `87.5`; `-` when not a number."""
    return "-" if not math.isfinite(rate) else f"{100 * rate:.1f}"


def points(difference: float) -> str:
    """A difference of rates as signed percentage points: `-0.004` -> `-0.4`; `-` when not a number."""
    return "-" if not math.isfinite(difference) else f"{100 * difference:+.1f}"
