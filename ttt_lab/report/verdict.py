"""The answer to a study's question in words: conditions ranked on the objective, each compared
with the reference (the study's declared baseline, else the best) by a test that fits the data,
corrected for several comparisons (Holm), and how much data a difference of the observed size
would need to be resolved.

The test: over seeds (Welch's t on the per-seed values) when both conditions have at least
`MIN_SEEDS` seeds, each variance floored at the binomial variance of one seed's games for a
rate metric (three seeds can agree by luck; the games' own noise is a lower bound); else over
games (Fisher's exact test on the pooled wins of a rate metric, e.g. `eval/optimal/draw_rate`,
whose games each run logs as `eval/<opponent>/games`). With one seed and a metric that is not
a rate (a mean reward) nothing can be tested, and it says so.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass

from ttt_lab.formats import points
from ttt_lab.report.collect import Trial, values

MIN_SEEDS = 3
ALPHA = 0.05
POWER = 0.8
RATE = re.compile(r"^(eval/[^/]+)/(win|draw|loss)_rate$")


@dataclass
class Pooled:
    successes: int
    games: int

    @property
    def rate(self) -> float:
        return self.successes / self.games if self.games else math.nan


def pooled(trials: list[Trial], metric: str) -> Pooled | None:
    """All of a condition's evaluation games of a rate metric, pooled over its seeds."""
    m = RATE.match(metric)
    if not m:
        return None
    k = n = 0
    for t in trials:
        games = t.metrics.get(f"{m.group(1)}/games")
        if games is None or metric not in t.metrics:
            return None
        n += int(games)
        k += round(t.metrics[metric] * games)
    return Pooled(k, n) if n else None


@dataclass
class Comparison:
    condition: str
    difference: float
    """Condition minus reference, in the metric's units."""
    test: str
    p: float
    p_holm: float = math.nan
    needed: str = ""

    @property
    def differs(self) -> bool:
        return self.p_holm < ALPHA


@dataclass
class Verdict:
    metric: str
    direction: str
    ranking: list[tuple[str, float, int]]
    """(condition, mean over seeds, seeds), best first."""
    reference: str
    comparisons: list[Comparison]

    def sentences(self) -> list[str]:
        if len(self.ranking) < 2:
            return [f"Only one condition ({self.reference}) finished: nothing to compare."]
        ref_kind = "the declared baseline" if self.reference != self.ranking[0][0] else "the best"
        out = [f"Ranked on {self.metric} ({self.direction}): "
               + "; ".join(f"{c} {100 * v:.1f} ({n} seed{'s' * (n != 1)})" for c, v, n in self.ranking) + "."]
        differ = [c for c in self.comparisons if c.differs]
        if not differ:
            out.append(f"No condition differs from {ref_kind} ({self.reference}) beyond noise "
                       f"(Holm-corrected p >= {ALPHA:g} for every comparison).")
        for c in differ:
            out.append(f"{c.condition} differs from {self.reference} by {points(c.difference)} points "
                       f"({c.test}, Holm-corrected p = {c.p_holm:.3g}).")
        few = min(n for _, _, n in self.ranking)
        if few < MIN_SEEDS:
            out.append(f"Caution: with {few} seed{'s' * (few != 1)} per condition these tests see the noise of the "
                       "evaluation games only, not the spread between training runs of one condition (seeds), "
                       f"which is often larger: a difference here is a lead to check with {MIN_SEEDS}+ "
                       "seeds (`seed=0,1,2`), not yet a finding.")
        return out


def _welch(a: list[float], b: list[float], floor_a: float = 0.0, floor_b: float = 0.0) -> float:
    """Two-sided Welch t-test with each variance at least its floor."""
    from scipy import stats

    va, vb = max(_var(a), floor_a) / len(a), max(_var(b), floor_b) / len(b)
    if va + vb == 0:
        return 1.0 if _mean(a) == _mean(b) else 0.0
    t = (_mean(a) - _mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(2 * stats.t.sf(abs(t), df))


def binomial_floor(trials: list[Trial], metric: str) -> float:
    """The variance one seed's rate has from its games alone (0 when the metric is no rate)."""
    got = pooled(trials, metric)
    if got is None or not got.games:
        return 0.0
    return got.rate * (1 - got.rate) / (got.games / len(trials))


def _fisher(a: Pooled, b: Pooled) -> float:
    from scipy import stats

    table = [[a.successes, a.games - a.successes], [b.successes, b.games - b.successes]]
    return float(stats.fisher_exact(table).pvalue)


_mean = statistics.fmean


def _var(v: list[float]) -> float:
    return statistics.variance(v) if len(v) > 1 else 0.0


def _z(q: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(q))


def seeds_needed(a: list[float], b: list[float], delta: float) -> int | None:
    """Seeds per condition for a two-sided test at ALPHA to find `delta` with POWER."""
    sd2 = (_var(a) + _var(b)) / 2
    if delta == 0 or sd2 == 0:
        return None
    return math.ceil(2 * (_z(1 - ALPHA / 2) + _z(POWER)) ** 2 * sd2 / delta**2)


def games_needed(p1: float, p2: float) -> int | None:
    """Games per condition to tell rates p1 and p2 apart (normal approximation)."""
    if p1 == p2:
        return None
    return math.ceil((_z(1 - ALPHA / 2) + _z(POWER)) ** 2 * (p1 * (1 - p1) + p2 * (1 - p2)) / (p1 - p2) ** 2)


def compare(name: str, trials: list[Trial], ref: list[Trial], metric: str) -> Comparison:
    a, b = values(trials, metric), values(ref, metric)
    diff = _mean(a) - _mean(b)
    pa, pb = pooled(trials, metric), pooled(ref, metric)
    if len(a) >= MIN_SEEDS and len(b) >= MIN_SEEDS:
        n = seeds_needed(a, b, diff)
        p = _welch(a, b, binomial_floor(trials, metric), binomial_floor(ref, metric))
        return Comparison(name, diff, f"Welch t over {len(a)} and {len(b)} seeds", p,
                          needed=f"about {n} seeds per condition" if n else "")
    if pa and pb:
        n = games_needed(pa.rate, pb.rate)
        return Comparison(name, diff, f"Fisher exact over {pa.games} and {pb.games} games", _fisher(pa, pb),
                          needed=f"about {n} games per condition" if n else "")
    return Comparison(name, diff, f"not testable ({len(a)} and {len(b)} seeds, a metric without games)", math.nan,
                      needed=f"{MIN_SEEDS}+ seeds per condition")


def holm(comparisons: list[Comparison]) -> None:
    """Holm's step-down correction, in place: p_holm for each comparison."""
    tested = sorted((c for c in comparisons if not math.isnan(c.p)), key=lambda c: c.p)
    m, running = len(tested), 0.0
    for i, c in enumerate(tested):
        running = max(running, min(1.0, (m - i) * c.p))
        c.p_holm = running


def verdict(conditions: dict[str, list[Trial]], metric: str, direction: str = "maximize",
            baseline: str = "") -> Verdict:
    scored = {c: values(ts, metric) for c, ts in conditions.items()}
    ranking = sorted(((c, _mean(v), len(v)) for c, v in scored.items() if v), key=lambda r: r[1],
                     reverse=direction == "maximize")
    if not ranking:
        return Verdict(metric, direction, [], baseline or "-", [])
    reference = baseline if scored.get(baseline) else ranking[0][0]
    comps = [compare(c, conditions[c], conditions[reference], metric) for c, _, _ in ranking if c != reference]
    holm(comps)
    return Verdict(metric, direction, ranking, reference, comps)
