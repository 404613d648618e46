"""A study's decisions: every condition against the reference on the objective, under the study's
declared procedure (`ttt_lab.stats.rules`), as data a report presents.

The family of comparisons: with a declared baseline, each other condition against it; without
one, every pair of conditions (the report shows those against the best, and correcting for all
pairs covers choosing the best after seeing the data, whatever the data's shape). Conditions are
compared seed by seed over the seeds both ran; conditions that ran different seeds are paired in
seed order, which is as valid for independent runs and only loses what pairing would have won."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from statistics import fmean
from typing import Any

import numpy as np

from ttt_lab.stats import betting, rules, signflip, spending
from ttt_lab.stats.design import FIXED, Design
from ttt_lab.stats.pairing import differences, finite, upto

DIFFERS, WITHIN, EQUIVALENT, UNRESOLVED = (rules.NAMES[k] for k in (rules.DIFFERS, rules.WITHIN, rules.EQUIVALENT,
                                                                    rules.UNRESOLVED))
Values = Mapping[Any, float]
"""A condition's objective by seed (or by (block, seed)): conditions are paired by these keys."""


@dataclass
class Comparison:
    condition: str
    reference: str
    metric: str
    procedure: str
    margin: float
    difference: float = math.nan
    """Condition minus reference, mean over the seeds compared, in the metric's units."""
    lo: float = math.nan
    hi: float = math.nan
    """The confidence sequence's interval for the mean difference (at `level`)."""
    direction: str = ""
    """higher | lower once the procedure has shown the difference is not 0."""
    decision: str = UNRESOLVED
    seeds: int = 0
    paired: bool = True
    p: float = math.nan
    """fixed: the exact sign-flip p-value at the last look (before correction)."""
    p_holm: float = math.nan
    """fixed: Holm-adjusted within the family at the last look."""
    level: float = 0.0
    """The error rate of this comparison's confidence sequence (alpha over the family)."""
    differences: list[float] = field(default_factory=list)
    settle: list[tuple[int, float]] = field(default_factory=list)
    """Projected chance of a decision by each next look: (seeds per condition, chance)."""

    def as_dict(self) -> dict:
        return finite(asdict(self))


@dataclass
class Decisions:
    design: Design
    reference: str
    declared: bool
    comparisons: list[Comparison]
    family: int
    """Comparisons the error rate is shared among (all pairs when the reference was not declared)."""
    looks: list[int]
    spent: list[float]
    """fixed: the error rate spent by each look taken, cumulative."""
    collapse: list = field(default_factory=list)
    """The declared collapse endpoint (`ttt_lab.stats.collapse.Collapse`), else empty."""


def decide(values: Mapping[str, Values], *, reference: str, declared: bool, metric: str, design: Design,
           looks: Sequence[int] = ()) -> Decisions:
    """Decide every comparison with the reference from the seeds there are (`looks`: for `fixed`,
    the declared looks taken so far; ignored by `anytime`, valid after every seed)."""
    names = list(values)
    pairs = [(c, reference) for c in names if c != reference] if declared else \
        [p for p in combinations(names, 2)]
    level = design.objective_alpha / max(1, len(pairs))
    keyed = {p: differences(values[p[0]], values[p[1]]) for p in pairs}
    comps = {p: _compare(keyed[p], p, metric, design, level) for p in pairs}
    spent: list[float] = []
    taken = list(looks)
    if design.procedure == FIXED:
        taken, spent = _fixed_directions(comps, {p: keyed[p][2] for p in pairs}, design)
    shown = [c for (a, b), c in comps.items() if reference in (a, b)]
    out = [_facing(c, reference) for c in shown]
    from ttt_lab.stats.collapse import endpoint

    return Decisions(design, reference, declared, out, len(pairs), taken, spent,
                     endpoint(values, reference, design, declared))


def _scaled(d: Sequence[float], design: Design) -> np.ndarray:
    return np.clip(np.asarray(d, float) / design.width, -1.0, 1.0)


def _compare(keyed: tuple[list[float], bool, list[int]], pair: tuple[str, str], metric: str, design: Design,
             level: float) -> Comparison:
    a, b = pair
    d, paired, seeds = keyed
    if design.procedure == FIXED and design.looks:
        d = d[:upto(seeds, design.looks[-1])]
    c = Comparison(a, b, metric, design.procedure, design.margin, seeds=len(d), paired=paired, level=level,
                   differences=d, difference=fmean(d) if d else math.nan)
    x = _scaled(d, design)
    lo, hi = betting.interval((x + 1) / 2, level) if len(d) else (0.0, 1.0)
    c.lo, c.hi = ((2 * lo - 1) * design.width, (2 * hi - 1) * design.width)
    if len(d) and design.procedure != FIXED:
        code, direction = rules.anytime(x, design.standard_margin(), level)
        c.decision, c.direction = rules.NAMES[int(code[-1])], _word(int(direction[-1]))
    return c


def _word(direction: int) -> str:
    return {1: "higher", -1: "lower"}.get(direction, "")


def _fixed_directions(comps: dict[tuple[str, str], Comparison], seeds: dict[tuple[str, str], list[int]],
                      design: Design) -> tuple[list[int], list[float]]:
    """Each declared look the seeds reach (seeds per condition, in every block): sign-flip
    p-values, Holm within the family at the look's share of alpha; a direction once shown stays.
    Then each decision from it."""
    from statsmodels.stats.multitest import multipletests

    have = max((len(set(s)) for s in seeds.values()), default=0)
    taken = [n for n in design.looks if n <= have]
    shares = spending.shares(design.looks, design.objective_alpha)
    direction = {p: 0 for p in comps}
    for k, n in enumerate(taken):
        cut = {p: c.differences[:upto(seeds[p], n)] for p, c in comps.items()}
        ps = [signflip.p_values(np.asarray([cut[p]]))[0] if cut[p] else 1.0 for p in comps]
        reject, adjusted = multipletests(ps, alpha=shares[k], method="holm")[:2]
        for (p, c), r, pv, adj in zip(comps.items(), reject, ps, adjusted, strict=True):
            c.p, c.p_holm = float(pv), float(adj)
            if r and not direction[p]:
                direction[p] = int(np.sign(sum(cut[p])))
    for p, c in comps.items():
        if not c.differences:
            continue
        above, below = rules.magnitude_claims(_scaled(c.differences, design), design.standard_margin(), c.level)
        code = rules.classify(np.array(direction[p]), above[-1], below[-1])
        c.decision, c.direction = rules.NAMES[int(code)], _word(direction[p])
    spent = list(np.cumsum(shares[:len(taken)]))
    return taken, [float(s) for s in spent]


def _facing(c: Comparison, reference: str) -> Comparison:
    """The comparison read as (other condition) minus the reference."""
    if c.reference == reference:
        return c
    flip = {"higher": "lower", "lower": "higher", "": ""}
    return Comparison(c.reference, reference, c.metric, c.procedure, c.margin, -c.difference, -c.hi, -c.lo,
                      flip[c.direction], c.decision, c.seeds, c.paired, c.p, c.p_holm, c.level,
                      [-x for x in c.differences], c.settle)
