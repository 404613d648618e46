"""A study's decisions: every condition against the reference, on each declared endpoint, as data
a report presents (`ttt_lab.stats.rules` holds the rules).

- The primary endpoint is the probability of improvement: the share of seeds on which the
  condition's training ends better than the reference's (ties half), decided *better on most
  seeds*, *worse on most seeds*, *equivalent* (with a declared delta) or *unresolved*.
- The mean difference is decided beside it at its own share of alpha, against the margin.
- The collapse endpoint (`ttt_lab.stats.collapse`) where the study declares `collapse_below`.

The family of comparisons: with a declared baseline, each other condition against it; without
one, every pair of conditions (the report shows those against the best; correcting for all pairs
covers choosing the best after seeing the data). Conditions are compared seed by seed over the
seeds both ran; conditions that ran different seeds are matched in seed order, a matching fixed
before any data (seeds are exchangeable), so every endpoint stays valid and only what pairing
would have won is lost."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from statistics import fmean
from typing import Any

import numpy as np

from ttt_lab.stats import betting, improvement, rules, spending
from ttt_lab.stats.design import FIXED, Design
from ttt_lab.stats.pairing import differences, finite, padded, upto

BETTER, WORSE, DIFFERS, WITHIN, EQUIVALENT, UNRESOLVED = (rules.NAMES[k] for k in (
    rules.BETTER, rules.WORSE, rules.DIFFERS, rules.WITHIN, rules.EQUIVALENT, rules.UNRESOLVED))
Values = Mapping[Any, float]
"""A condition's objective by seed (or by (block, seed)): conditions are paired by these keys."""
HORIZON = 400


@dataclass
class Comparison:
    condition: str
    reference: str
    metric: str
    procedure: str
    margin: float
    decision: str = UNRESOLVED
    """The primary endpoint's: better / worse on most seeds, equivalent or unresolved."""
    better: int = 0
    worse: int = 0
    ties: int = 0
    improvement: float = math.nan
    """The share of seeds the condition scored better on, ties half."""
    improvement_lo: float = math.nan
    improvement_hi: float = math.nan
    """The confidence sequence for the probability of improvement (at `level`)."""
    if_agree: int | None = None
    """Unresolved: the seeds after which it would decide if every further seed agreed with the
    majority so far (None beyond HORIZON)."""
    difference: float = math.nan
    """Condition minus reference, mean over the seeds compared, in the metric's units."""
    lo: float = math.nan
    hi: float = math.nan
    """The confidence sequence's interval for the mean difference (at `mean_level`)."""
    direction: str = ""
    """higher | lower once the mean difference is shown not to be 0."""
    mean_decision: str = UNRESOLVED
    seeds: int = 0
    paired: bool = True
    p: float = math.nan
    """fixed: the exact sign test's p-value at the last look taken (before correction)."""
    level: float = 0.0
    """The probability of improvement's error rate for this comparison."""
    mean_level: float = 0.0
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
    """Comparisons each endpoint's error rate is shared among (all pairs without a declared reference)."""
    looks: list[int]
    spent: list[float]
    """fixed: the primary endpoint's error rate spent by each look taken, cumulative."""
    collapse: list = field(default_factory=list)
    """The declared collapse endpoint (`ttt_lab.stats.collapse.Collapse`), else empty."""


def decide(values: Mapping[str, Values], *, reference: str, declared: bool, metric: str, design: Design,
           looks: Sequence[int] = (), maximize: bool = True) -> Decisions:
    """Decide every comparison with the reference from the seeds there are (`looks`: for `fixed`,
    the declared looks taken so far; ignored by `anytime`, valid after every seed)."""
    names = list(values)
    pairs = [(c, reference) for c in names if c != reference] if declared else list(combinations(names, 2))
    family = max(1, len(pairs))
    keyed = {p: differences(values[p[0]], values[p[1]]) for p in pairs}
    comps = {p: _compare(keyed[p], p, metric, design, family, maximize) for p in pairs}
    taken = list(looks)
    spent: list[float] = []
    if design.procedure == FIXED:
        taken, spent = _fixed(comps, {p: keyed[p][2] for p in pairs}, design, maximize)
    for c in comps.values():
        if c.decision == UNRESOLVED and c.seeds and design.procedure != FIXED:
            c.if_agree = seeds_if_agreeing(_scores(c.differences, maximize), c.level)
    out = [_facing(c, reference) for (a, b), c in comps.items() if reference in (a, b)]
    from ttt_lab.stats.collapse import endpoint

    return Decisions(design, reference, declared, out, family, taken, spent,
                     endpoint(values, reference, design, declared, maximize))


def _scores(d: Sequence[float], maximize: bool) -> np.ndarray:
    return improvement.scores(np.asarray(d, float) * (1 if maximize else -1))


def _compare(keyed: tuple[list[float], bool, list[int]], pair: tuple[str, str], metric: str, design: Design,
             family: int, maximize: bool) -> Comparison:
    d, paired, seeds = keyed
    if design.procedure == FIXED and design.looks:
        d = d[:upto(seeds, design.looks[-1])]
    c = Comparison(pair[0], pair[1], metric, design.procedure, design.margin, seeds=len(d), paired=paired,
                   level=design.improvement_alpha / family, mean_level=design.mean_alpha / family,
                   differences=d, difference=fmean(d) if d else math.nan)
    s = _scores(d, maximize)
    c.better, c.worse, c.ties = int((s == 1).sum()), int((s == 0).sum()), int((s == 0.5).sum())
    c.improvement = float(s.mean()) if len(s) else math.nan
    out = improvement.excluded(s, c.level) if len(s) else None  # one sequence: the interval and the decision
    c.improvement_lo, c.improvement_hi = (improvement.interval_of(out[-1], c.improvement) if out is not None
                                          else (0.0, 1.0))
    x = np.clip(np.asarray(d, float) / design.width, -1.0, 1.0)
    lo, hi = betting.interval((x + 1) / 2, c.mean_level) if len(d) else (0.0, 1.0)
    c.lo, c.hi = ((2 * lo - 1) * design.width, (2 * hi - 1) * design.width)
    if len(d):
        code, direction = rules.mean(x, design.standard_margin(), c.mean_level)
        c.mean_decision, c.direction = rules.NAMES[int(code[-1])], {1: "higher", -1: "lower"}.get(
            int(direction[-1]), "")
        if design.procedure != FIXED:
            c.decision = rules.NAMES[int(rules.improvement_codes(s, c.level, design.delta, out=out)[-1])]
    return c


def seeds_if_agreeing(s: np.ndarray, level: float, horizon: int = HORIZON) -> int | None:
    """The seeds after which the probability of improvement decides if every further seed points
    the majority's way (better on a tie); None if not within `horizon`."""
    way = 0.0 if (s == 0).sum() > (s == 1).sum() else 1.0
    more = np.concatenate([s, np.full(max(0, horizon - len(s)), way)])
    better, worse, _ = improvement.claims(more, level)
    hit = np.flatnonzero(better | worse)
    return int(hit[0]) + 1 if hit.size else None


def _fixed(comps: dict[tuple[str, str], Comparison], seeds: dict[tuple[str, str], list[int]], design: Design,
           maximize: bool) -> tuple[list[int], list[float]]:
    """The fixed design's sign tests at each declared look the seeds reach (seeds per condition, in
    every block), Holm within the family at the look's usable share; a direction once shown stays."""
    have = max((len(set(s)) for s in seeds.values()), default=0)
    taken = [n for n in design.looks if n <= have]
    shares = spending.usable_shares(design.looks, design.improvement_alpha, len(comps))
    for k, n in enumerate(taken):
        cut = [_scores(c.differences[:upto(seeds[p], n)], maximize) for p, c in comps.items()]
        p_values, reject, way = rules.sign_look(padded(cut), shares[k])
        for c, r, pv, wy in zip(comps.values(), reject, p_values, way, strict=True):
            c.p = float(pv)
            if r and c.decision == UNRESOLVED:
                c.decision = rules.NAMES[int(wy)]
    return taken, [float(x) for x in np.cumsum(shares[:len(taken)])]


def _facing(c: Comparison, reference: str) -> Comparison:
    """The comparison read as (other condition) against the reference."""
    if c.reference == reference:
        return c
    flip = {"higher": "lower", "lower": "higher", "": "", BETTER: WORSE, WORSE: BETTER}
    return Comparison(c.reference, reference, c.metric, c.procedure, c.margin, flip.get(c.decision, c.decision),
                      c.worse, c.better, c.ties, 1 - c.improvement, 1 - c.improvement_hi, 1 - c.improvement_lo,
                      c.if_agree, -c.difference, -c.hi, -c.lo, flip[c.direction], c.mean_decision, c.seeds,
                      c.paired, c.p, c.level, c.mean_level, [-x for x in c.differences], c.settle)
