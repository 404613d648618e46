"""The collapse endpoint: trainings collapse or they do not, so a study may declare
`collapse_below:` before its first look and get each arm's collapse rate against the reference's,
decided at its own share of alpha (`collapse_alpha:`).

On paired seeds only a seed where exactly one arm collapsed says which collapses more (McNemar's
logic): such a discordant seed scores 1 when only the reference collapsed, 0 when only the arm
did, and every other seed 1/2. `anytime` runs the probability of improvement's confidence
sequence on those scores (`ttt_lab.stats.improvement`): the arm collapses *fewer* times on most
discordant seeds when its lower end passes 1/2. `fixed` runs the exact sign test on the discordant
seeds (the exact McNemar test) at the declared looks, with the same spending and Holm as the
primary endpoint. Arms on different seeds are matched in seed order, as for every endpoint."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from ttt_lab.stats import improvement, rules, spending
from ttt_lab.stats.design import FIXED, Design
from ttt_lab.stats.pairing import differences, finite, padded, upto


@dataclass
class Collapse:
    condition: str
    reference: str
    collapsed: int
    seeds: int
    reference_collapsed: int
    reference_seeds: int
    paired: bool
    test: str
    only_reference: int = 0
    """Discordant seeds on which only the reference collapsed."""
    only_condition: int = 0
    """Discordant seeds on which only this condition collapsed."""
    needed: int | None = None
    """The fewest discordant seeds, all one way, that can decide at this level."""
    lo: float = math.nan
    hi: float = math.nan
    """anytime: the confidence sequence for P(fewer collapses on a seed), ties half."""
    p: float = math.nan
    """fixed: the exact McNemar p-value at the last look taken."""
    direction: str = ""
    """fewer | more (collapses than the reference) once shown."""

    @property
    def rate(self) -> float:
        return self.collapsed / self.seeds if self.seeds else math.nan

    @property
    def reference_rate(self) -> float:
        return self.reference_collapsed / self.reference_seeds if self.reference_seeds else math.nan

    def as_dict(self) -> dict:
        return finite(asdict(self) | {"rate": self.rate, "reference_rate": self.reference_rate})


def endpoint(values: Mapping[str, Mapping], reference: str, design: Design, declared: bool = True,
             maximize: bool = True) -> list[Collapse]:
    """Each other condition's collapses against the reference's; empty unless declared. Without a
    declared reference alpha is shared over every pair, as the objective's comparisons do. A seed
    collapsed when its objective ends on the wrong side of the threshold (below it when maximised)."""
    if design.collapse_below is None or reference not in values:
        return []
    sign = 1 if maximize else -1
    flags = {c: {s: float(sign * v < sign * design.collapse_below) for s, v in vals.items()}
             for c, vals in values.items()}
    others = [c for c in values if c != reference]
    k = len(values)
    level = design.collapse_alpha / max(1, len(others) if declared else k * (k - 1) // 2)
    test = ("exact McNemar (sign test on the discordant seeds) at the declared looks" if design.procedure == FIXED
            else "confidence sequence on the discordant seeds (anytime)")
    out = []
    for c in others:
        d, paired, seeds = differences(flags[reference], flags[c])  # +1: only the reference collapsed
        s = 0.5 + 0.5 * np.asarray(d, float)
        r = Collapse(c, reference, int(sum(flags[c].values())), len(flags[c]), int(sum(flags[reference].values())),
                     len(flags[reference]), paired, test, int((s == 1).sum()), int((s == 0).sum()),
                     improvement.agreeing_to_decide(level))
        if design.procedure != FIXED and len(s):
            r.lo, r.hi = improvement.interval(s, level)
            r.direction = "fewer" if r.lo > 0.5 else "more" if r.hi < 0.5 else ""
        out.append((r, s, seeds))
    if design.procedure == FIXED:
        _fixed(out, design, level * max(1, len(out)))
    return [r for r, _, _ in out]


def _fixed(out: list, design: Design, alpha: float) -> None:
    have = min((len(set(seeds)) for _, _, seeds in out), default=0)
    shares = spending.usable_shares(design.looks, alpha, len(out))
    for k, n in enumerate(x for x in design.looks if x <= have):
        cut = [s[:upto(seeds, n)] for _, s, seeds in out]
        p, reject, way = rules.sign_look(padded(cut), shares[k])
        for (r, _, _), pv, rej, wy in zip(out, p, reject, way, strict=True):
            r.p = float(pv)
            if rej and not r.direction:
                r.direction = "fewer" if wy == rules.BETTER else "more"
