"""Each endpoint's error rates and power on simulated studies, decided by the package's own rules
(`ttt_lab.stats.rules`) at the levels `decide` uses.

A study's comparisons are each other arm against the reference (a declared baseline: the family
is arms - 1). Every decision a report could print is counted, at every seed up to the study's
last (anytime: a raised budget only adds looks, and claims, once made, stay), or at every declared
look (fixed). A false rate is the share of studies with any wrong decision on that endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.calibration.simulate import COLLAPSE, IMPROVEMENT, MEAN, Case
from ttt_lab.stats import improvement, rules
from ttt_lab.stats.design import ANYTIME, Design

CHUNK = 250
POWER = 0.8


@dataclass(frozen=True)
class Rates:
    case: str
    procedure: str
    studies: int
    arms: int
    seeds: int
    false: dict[str, float]
    """endpoint -> the share of studies with a wrong direction (a null endpoint) or a wrong
    "equivalent" (an endpoint at its equivalence margin)."""
    limits: dict[str, float]
    """endpoint -> its share of alpha plus three Monte Carlo standard errors."""

    def ok(self) -> bool:
        return all(self.false[k] <= self.limits[k] for k in self.false)


def _mc(rate: float, studies: int) -> float:
    return 3 * float(np.sqrt(rate * (1 - rate) / studies))


def design_for(case: Case, procedure: str, looks: Sequence[int]) -> Design:
    return Design(procedure, case.margin, case.bounds, tuple(looks) if procedure != ANYTIME else (),
                  delta=case.delta, collapse_below=case.collapse_below,
                  collapse_alpha=0.01 if case.collapse_below is not None else 0.0)


def endpoint_codes(values: np.ndarray, design: Design, looks: Sequence[int]) -> dict[str, np.ndarray]:
    """Each endpoint's decision codes, (studies, comparisons, times): every seed under anytime, each
    declared look under fixed (the mean's sequence read at the looks)."""
    m = values.shape[1] - 1
    d = values[:, 1:] - values[:, :1]
    s = improvement.scores(d)
    x = np.clip(d / design.width, -1, 1)
    mean, _ = rules.mean(x, design.standard_margin(), design.mean_alpha / m)
    if design.procedure == ANYTIME:
        out = {IMPROVEMENT: rules.improvement_codes(s, design.improvement_alpha / m, design.delta), MEAN: mean}
    else:
        out = {IMPROVEMENT: rules.sign_test(s, design.improvement_alpha, looks)[0],
               MEAN: mean[..., np.asarray(looks) - 1]}
    if design.collapse_below is not None:
        flags = (values < design.collapse_below).astype(float)
        c = 0.5 + 0.5 * (flags[:, :1] - flags[:, 1:])
        out[COLLAPSE] = (rules.improvement_codes(c, design.collapse_alpha / m) if design.procedure == ANYTIME else
                         rules.sign_test(c, design.collapse_alpha, looks)[0])
    return out


WRONG = {"direction": (rules.BETTER, rules.WORSE, rules.DIFFERS, rules.WITHIN), "equivalent": (rules.EQUIVALENT,)}


def calibrate(case: Case, procedure: str, *, studies: int, seeds: int, arms: int = 2, looks: Sequence[int] = (),
              seed: int = 0) -> Rates:
    rng = np.random.default_rng(seed)
    design = design_for(case, procedure, looks)
    wrong = {e: 0 for e in (*case.nulls, *case.equivalence)}
    for start in range(0, studies, CHUNK):
        size = min(CHUNK, studies - start)
        codes = endpoint_codes(case.draw(rng, size, arms, seeds), design, looks)
        for e in wrong:
            bad = WRONG["direction" if e in case.nulls else "equivalent"]
            wrong[e] += int(np.isin(codes[e], bad).any(axis=(-1, -2)).sum())
    share = {IMPROVEMENT: design.improvement_alpha, MEAN: design.mean_alpha, COLLAPSE: design.collapse_alpha}
    false = {e: w / studies for e, w in wrong.items()}
    return Rates(case.name, procedure, studies, arms, seeds, false,
                 {e: share[e] + _mc(share[e], studies) for e in false})


def seeds_to_decide(case: Case, *, studies: int, seeds: int, arms: int = 2, seed: int = 0,
                    procedure: str = ANYTIME, looks: Sequence[int] = ()) -> float:
    """The fewest seeds by which POWER of the comparisons had decided the primary endpoint "better"
    (inf if not by `seeds`), each comparison at its share of the family's alpha."""
    rng = np.random.default_rng(seed)
    design = design_for(case, procedure, looks)
    firsts = []
    for start in range(0, studies, CHUNK):
        size = min(CHUNK, studies - start)
        codes = endpoint_codes(case.draw(rng, size, arms, seeds), design, looks)[IMPROVEMENT]
        done = codes == rules.BETTER
        at = np.asarray(looks) if procedure != ANYTIME else np.arange(1, seeds + 1)
        firsts.append(np.where(done.any(-1), at[np.argmax(done, -1)], np.inf).ravel())
    n = np.sort(np.concatenate(firsts))
    return float(n[int(np.ceil(POWER * n.size)) - 1])


def sign_test_seeds(theta: float, alpha: float, *, limit: int = 1000) -> int | None:
    """The fixed-n exact two-sided sign test's seeds for 80 % power at P(better) = theta (no ties),
    computed exactly from the binomial."""
    from scipy.stats import binom

    for n in range(1, limit):
        k = np.arange(n + 1)
        if binom.pmf(k, n, theta)[rules.sign_p(k, n - k) <= alpha].sum() >= POWER:
            return n
    return None


def adastop(draw, *, studies: int, step: int, interims: int, alpha: float = 0.05, corrected: bool = False,
            seed: int = 0, permutations: int = 10_000) -> tuple[float, float]:
    """AdaStop (Mathieu et al. 2023; `adastop` 0.1.3) as its authors intend, independent seeds per
    arm: the share of studies that decided a direction ("larger" or "smaller") and the fewest seeds
    per arm by which 80 % did. `corrected`: the |T| boundary read off |permuted statistics| (a thin wrapper)."""
    from adastop import MultipleAgentsComparator

    class Corrected(MultipleAgentsComparator):
        def compute_mean_diffs(self, k, Z):
            signed = super().compute_mean_diffs(k, Z)
            return {key: list(np.abs(v)) for key, v in signed.items()}

    rng = np.random.default_rng(seed)
    values = draw(rng, studies, 2, step * interims)
    kind = Corrected if corrected else MultipleAgentsComparator
    decided, used = 0, []
    for i in range(studies):
        comp = kind(n=step, K=interims, B=permutations, alpha=alpha, seed=int(i))
        for k in range(interims):
            comp.partial_compare({"ref": values[i, 0, :step * (k + 1)], "arm": values[i, 1, :step * (k + 1)]},
                                 verbose=False)
            if comp.is_finished:
                break
        if next(iter(comp.decisions.values())) in ("larger", "smaller"):
            decided += 1
            used.append(step * (k + 1))
    used_sorted = np.sort(np.concatenate([used, np.full(studies - len(used), np.inf)]))
    return decided / studies, float(used_sorted[int(np.ceil(POWER * studies)) - 1])
