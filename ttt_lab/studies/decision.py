"""A decision for every comparison of a study: differs, equivalent, or unresolved (with the seeds
that would settle it), kept valid while seeds are added and the data looked at again.

Conditions that ran on the same seeds are compared seed by seed (a paired t interval on the
per-seed differences: a seed's warm-up and data are shared by all conditions, so pairing removes
most of the spread); otherwise Welch's interval. At each look the comparison **differs** when its
interval excludes 0 and is **equivalent** when its two-one-sided-tests interval (TOST, Schuirmann
1987) lies inside ±margin; intervals are corrected for the number of comparisons by Holm's
step-down levels.

Repeated looks (`--until-settled`) spend the error rate with Lan & DeMets' Pocock-type spending
function, alpha(t) = alpha * ln(1 + (e - 1) t), t = seeds / max seeds (Lan & DeMets 1983,
Biometrika 70:659-663): look k may use alpha(t_k) - alpha(t_{k-1}), so by the union bound the
chance of any wrong "differs" (or wrong "equivalent") over all looks stays at most alpha. A study
looked at once spends all of alpha. A comparison keeps the decision of the look that settled it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

ALPHA = 0.05
DIFFERS, EQUIVALENT, UNRESOLVED = "differs", "equivalent", "unresolved"


def spent(n: int, n_max: int, alpha: float = ALPHA) -> float:
    """The error rate spent once `n` of at most `n_max` seeds are in (Pocock-type spending)."""
    t = min(1.0, n / n_max) if n_max > 0 else 1.0
    return alpha * math.log(1 + (math.e - 1) * t)


def look_levels(looks: Sequence[int], n_max: int, alpha: float = ALPHA) -> list[float]:
    """The error rate each look may use (a single look at `n_max`: all of alpha)."""
    out, before = [], 0.0
    for n in looks:
        now = spent(n, n_max, alpha)
        out.append(max(0.0, now - before))
        before = now
    return out


@dataclass
class Comparison:
    condition: str
    reference: str
    metric: str
    difference: float = math.nan
    """Condition minus reference, mean over seeds, in the metric's units."""
    lo: float = math.nan
    hi: float = math.nan
    """The interval of the look that decided (or of the last look): excludes 0 when it differs."""
    test: str = ""
    paired: bool = True
    p: float = math.nan
    p_holm: float = math.nan
    p_equivalence: float = math.nan
    """Two one-sided tests within ±margin (statsmodels), at the deciding look, before correction."""
    margin: float = 0.0
    decision: str = UNRESOLVED
    seeds: int = 0
    seeds_needed: int | None = None
    """Seeds per condition the observed spread says would settle it (unresolved only)."""
    looks: int = 0
    level: float = 0.0
    """The error rate the deciding look used for this comparison (after Holm)."""

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


Values = Mapping[int, float]
"""A condition's objective by seed."""


class _Test:
    """One t test of mean(a - b) — paired (on the per-seed differences) or Welch's — whose
    interval can be read at any confidence."""

    def __init__(self, a: list[float], b: list[float], paired: bool) -> None:
        from scipy import stats

        self.a, self.b, self.paired = a, b, paired
        diffs = [x - y for x, y in zip(a, b, strict=True)] if paired else None
        self.constant = diffs is not None and max(diffs) == min(diffs)
        self.difference = sum(a) / len(a) - sum(b) / len(b)
        if self.constant:  # no spread: the difference is what it is
            self.p = 1.0 if self.difference == 0 else 0.0
            return
        if paired:  # the one-sample t on the differences, as scipy.stats.ttest_rel, without its overhead
            n = len(diffs)
            self.se, self.df = statistics.stdev(diffs) / math.sqrt(n), n - 1
            self.p = float(2 * stats.t.sf(abs(self.difference) / self.se, self.df))
            return
        result = stats.ttest_ind(a, b, equal_var=False)
        self.df = float(result.df)
        self.se = abs(self.difference / float(result.statistic)) if result.statistic else math.inf
        p = float(result.pvalue)
        self.p = 1.0 if math.isnan(p) else p

    def interval(self, confidence: float) -> tuple[float, float]:
        from scipy import stats

        if self.constant:
            return self.difference, self.difference
        half = float(stats.t.ppf(0.5 + confidence / 2, self.df)) * self.se
        return self.difference - half, self.difference + half

    def equivalence_p(self, margin: float) -> float:
        """Two one-sided tests within ±margin (statsmodels), for the record."""
        import numpy as np
        from statsmodels.stats.weightstats import ttost_ind, ttost_paired

        if self.constant:
            return 0.0 if abs(self.difference) < margin else 1.0
        x, y = np.asarray(self.a, float), np.asarray(self.b, float)
        if self.paired:
            return float(ttost_paired(x, y, -margin, margin)[0])
        return float(ttost_ind(x, y, -margin, margin, usevar="unequal")[0])


def _holm_levels(ps: list[float], level: float) -> list[float]:
    """Holm's per-comparison levels: the comparison with the i-th smallest p is tested at level/(m - i)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [level] * len(ps)
    for rank, i in enumerate(order):
        out[i] = level / (len(ps) - rank)
    return out


def _pairs(values: Values, ref: Values, n: int) -> tuple[list[float], list[float], bool]:
    """Paired over the first `n` seeds both ran (when they share two or more), else the first `n`
    of each, unpaired."""
    common = sorted(set(values) & set(ref))[:n]
    if len(common) >= 2:
        return [values[s] for s in common], [ref[s] for s in common], True
    return [values[s] for s in sorted(values)[:n]], [ref[s] for s in sorted(ref)[:n]], False


def _needed(a: list[float], b: list[float], paired: bool, margin: float, level: float) -> int | None:
    """Seeds per condition at which an interval of the observed spread would settle either way."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return None
    if paired:
        d = [x - y for x, y in zip(a, b, strict=True)]
        sd = stats.tstd(d) if max(d) != min(d) else 0.0
    else:
        sd = math.sqrt(stats.tvar(a) + stats.tvar(b)) if len(set(a + b)) > 1 else 0.0
    diff = abs(sum(a) / len(a) - sum(b) / len(b))
    gap = max(diff, margin - diff)
    if sd == 0 or gap <= 0:
        return None
    z = float(stats.norm.ppf(1 - level / 2))
    return max(len(a) + 1, math.ceil((z * sd / gap) ** 2) + 1)


class Sequential:
    """Looks taken one at a time (what `--until-settled` does between rounds of seeds)."""

    def __init__(self, conditions: Sequence[str], reference: str, *, metric: str, margin: float, max_seeds: int,
                 alpha: float = ALPHA) -> None:
        self.reference, self.margin, self.max_seeds, self.alpha = reference, margin, max_seeds, alpha
        self.comparisons = {c: Comparison(c, reference, metric, margin=margin) for c in conditions if c != reference}
        self.looks: list[int] = []

    def look(self, conditions: Mapping[str, Values], n: int) -> bool:
        """Decide what the first `n` seeds settle; True when every comparison is settled."""
        before = spent(self.looks[-1], self.max_seeds, self.alpha) if self.looks else 0.0
        self.looks.append(n)
        level = spent(n, self.max_seeds, self.alpha) - before
        _look(self.comparisons, conditions, self.reference, n, level, len(self.looks), self.margin)
        return all(c.decision != UNRESOLVED for c in self.comparisons.values())


def decide(conditions: Mapping[str, Values], reference: str, *, metric: str, margin: float,
           looks: Sequence[int] | None = None, max_seeds: int | None = None, alpha: float = ALPHA
           ) -> list[Comparison]:
    """Every other condition against `reference`, replayed over `looks` (the seed counts at which
    the study was looked at; default one look at the seeds there are)."""
    have = min((len(v) for v in conditions.values()), default=0)
    looks = [n for n in (looks or [have]) if n <= have] or [have]
    seq = Sequential(list(conditions), reference, metric=metric, margin=margin, max_seeds=max_seeds or looks[-1],
                     alpha=alpha)
    for n in looks:
        seq.look(conditions, n)
    out = seq.comparisons
    others = list(out)
    for c in out.values():
        if c.seeds >= 2:
            c.p_equivalence = _Test(*_pairs(conditions[c.condition], conditions[reference], c.seeds)).equivalence_p(
                margin)
        if c.decision == UNRESOLVED:
            a, b, paired = _pairs(conditions[c.condition], conditions[reference], looks[-1])
            c.seeds_needed = _needed(a, b, paired, margin, alpha / max(1, len(others)))
    return list(out.values())


def _look(out: dict[str, Comparison], conditions: Mapping[str, Values], reference: str, n: int, level: float,
          look: int, margin: float) -> None:
    open_ = [c for c in out.values() if c.decision == UNRESOLVED]
    if n < 2 or level <= 0 or not open_:
        return
    tests = {c.condition: _Test(*_pairs(conditions[c.condition], conditions[reference], n)) for c in open_}
    ps = [t.p for t in tests.values()]
    levels = dict(zip(tests, _holm_levels(ps, level), strict=True))
    holm = dict(zip(tests, _holm_adjusted(ps), strict=True))
    for c in open_:
        t, at = tests[c.condition], levels[c.condition]
        c.difference, c.p, c.p_holm = t.difference, t.p, holm[c.condition]
        c.paired, c.seeds, c.looks, c.level = t.paired, min(len(t.a), len(t.b)), look, at
        c.test = "paired t over seeds" if t.paired else "Welch t over seeds (different seeds: unpaired)"
        c.lo, c.hi = t.interval(1 - at)
        if c.lo > 0 or c.hi < 0:
            c.decision = DIFFERS
            continue
        elo, ehi = t.interval(1 - 2 * at)  # TOST at `at`: the 1 - 2 at interval inside ±margin
        if -margin < elo and ehi < margin:
            c.decision, c.lo, c.hi = EQUIVALENT, elo, ehi


def _holm_adjusted(ps: list[float]) -> list[float]:
    if len(ps) == 1:
        return ps
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(ps, method="holm")[1]]
