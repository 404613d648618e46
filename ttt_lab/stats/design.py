"""What a study declares before its first trial about how it will be decided."""

from __future__ import annotations

from dataclasses import dataclass

ANYTIME, FIXED = "anytime", "fixed"
PROCEDURES = (ANYTIME, FIXED)
ALPHA = 0.05


@dataclass(frozen=True)
class Design:
    procedure: str = ANYTIME
    """`anytime` (a confidence sequence, valid at any seed count) or `fixed` (declared looks)."""
    margin: float = 0.05
    """The smallest difference that matters, in the objective's units."""
    bounds: tuple[float, float] = (0.0, 1.0)
    """The range the objective can take: a difference lies within ±(hi - lo)."""
    looks: tuple[int, ...] = ()
    """`fixed`: the seeds per condition at each look, declared before the first trial."""
    alpha: float = ALPHA
    collapse_below: float | None = None
    """A second endpoint: a seed whose objective ends below this collapsed."""
    collapse_alpha: float = 0.0
    """The part of alpha the collapse endpoint uses (the objective keeps the rest)."""

    @property
    def width(self) -> float:
        return self.bounds[1] - self.bounds[0]

    @property
    def objective_alpha(self) -> float:
        return self.alpha - (self.collapse_alpha if self.collapse_below is not None else 0.0)

    def standard_margin(self) -> float:
        return self.margin / self.width


def default_bounds(metric: str) -> tuple[float, float] | None:
    """The range of a metric whose range the project knows: rates and exploitability in [0, 1], a
    gap between two rates in [-1, 1]; None for anything else (a study must declare it)."""
    if metric.endswith(("_rate", "exploitability", "optimal_agreement")):
        return 0.0, 1.0
    if metric.endswith(".gap"):
        return -1.0, 1.0
    return None


def planned_looks(initial: int, budget: int) -> tuple[int, ...]:
    """The default declared looks of a fixed design: the study's seeds, then as many more at a time
    up to the budget."""
    return (*tuple(range(initial, budget, initial)), budget) if budget > initial else (initial,)
