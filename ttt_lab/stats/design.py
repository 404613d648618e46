"""What a study declares before its first look about how it will be decided: the procedure, the
endpoints and how they share the error rate. The shares are a split (Bonferroni across endpoints
and comparisons): the probability of improvement gets what the mean and the collapse endpoint do
not take."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ANYTIME, FIXED = "anytime", "fixed"
PROCEDURES = (ANYTIME, FIXED)
ALPHA = 0.05
MEAN_ALPHA = 0.01


@dataclass(frozen=True)
class Design:
    procedure: str = ANYTIME
    """`anytime` (confidence sequences, valid at any seed count) or `fixed` (declared looks)."""
    margin: float = 0.05
    """The mean endpoint's smallest difference that matters, in the objective's units."""
    bounds: tuple[float, float] = (0.0, 1.0)
    """The range the objective can take: a difference lies within +-(hi - lo)."""
    looks: tuple[int, ...] = ()
    """`fixed`: the seeds per condition at each look, declared before the first trial."""
    alpha: float = ALPHA
    """The study's error rate, over every endpoint and comparison."""
    mean_alpha: float = MEAN_ALPHA
    """The mean difference's share of alpha."""
    delta: float = 0.0
    """The probability of improvement's equivalence margin: "equivalent" means inside 1/2 +- delta
    (none when 0)."""
    collapse_below: float | None = None
    """A third endpoint: a seed whose objective ends below this collapsed."""
    collapse_alpha: float = 0.0
    """The collapse endpoint's share of alpha."""

    @property
    def width(self) -> float:
        return self.bounds[1] - self.bounds[0]

    @property
    def collapse_share(self) -> float:
        return self.collapse_alpha if self.collapse_below is not None else 0.0

    @property
    def improvement_alpha(self) -> float:
        """The primary endpoint's share: alpha less the mean's and the collapse endpoint's."""
        return self.alpha - self.mean_alpha - self.collapse_share

    def standard_margin(self) -> float:
        return self.margin / self.width

    def declaration(self) -> dict:
        """What is stored with a study at its first look and must not change after it."""
        d = asdict(self)
        return d | {"bounds": list(self.bounds), "looks": list(self.looks)}


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
