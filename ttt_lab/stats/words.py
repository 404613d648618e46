"""A comparison's probability-of-improvement decision as one sentence, in the endpoint's words:
the sweep's look prints it, the report and the findings lead with it."""

from __future__ import annotations

from ttt_lab.stats.decide import BETTER, EQUIVALENT, WORSE, Comparison
from ttt_lab.stats.design import FIXED, Design


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def share(lo: float) -> str:
    """The interval's lower end as the sentence says it: the sequence excludes every value at or
    below one half, so at its least it says "more than half"."""
    return f"better on at least {pct(lo)} of seeds" if lo > 0.505 else "better on more than half of the seeds"


def primary(c: Comparison, *, metric: str, direction: str, design: Design | None) -> str:
    """The probability of improvement's sentence for one comparison."""
    from ttt_lab.stats.projection import text

    level = 1 - (design.alpha if design else 0.05)
    fixed = c.procedure == FIXED
    how = f"exact sign test, p = {c.p:.2g}" if fixed else f"anytime {100 * level:.0f} %"
    better = "higher" if direction == "maximize" else "lower"
    if c.decision == BETTER:
        bound = "" if fixed else f": {share(c.improvement_lo)}"
        return (f"{c.condition} trained the better policy ({better} {metric}) than {c.reference} on {c.better} of "
                f"{c.seeds} seeds{bound} ({how}).")
    if c.decision == WORSE:
        bound = "" if fixed else f": {share(1 - c.improvement_hi)}"
        return (f"{c.reference} trained the better policy ({better} {metric}) than {c.condition} on {c.worse} of "
                f"{c.seeds} seeds{bound} ({how}).")
    if c.decision == EQUIVALENT:
        d = design.delta if design else 0.0
        return (f"{c.condition} and {c.reference} are equivalent: neither is better on more than {pct(0.5 + d)} of "
                f"seeds (probability of improvement in [{c.improvement_lo:.2f}, {c.improvement_hi:.2f}], {how}).")
    if c.seeds < 2:
        return (f"{c.condition} against {c.reference} is unresolved: with {c.seeds or 'no'} seed"
                f"{'s' * (c.seeds != 1)} compared there is nothing to decide on; give the study seeds (seed=0,1,2).")
    agree = (f" If the next seeds agree with the majority, it decides after {c.if_agree} seeds."
             if c.if_agree else "")
    chance = f" Projected chance of a decision: {text(c.settle)}." if c.settle else ""
    return (f"{c.condition} against {c.reference} is unresolved after {c.seeds} seeds: better on {c.better}, worse on "
            f"{c.worse}, tied on {c.ties}; probability of improvement {c.improvement:.2f} "
            f"[{c.improvement_lo:.2f}, {c.improvement_hi:.2f}].{agree}{chance}")
