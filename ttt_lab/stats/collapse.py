"""The collapse endpoint: trainings collapse or they do not, so a study may declare
`collapse_below:` before its first trial and get each arm's collapse rate, compared with the
reference's at its own share of alpha (`collapse_alpha:`).

Arms that ran the same seeds are compared seed by seed: each seed's collapse indicators differ by
-1, 0 or +1, and the exact sign-flip test on those differences is the exact McNemar test — valid
under the null's exchangeability of the arms within a seed, which an unpaired test (Boschloo,
Fisher) is not when the arms share a warm-up. Arms on different seeds get scipy's Boschloo exact
test. `anytime` uses the betting confidence sequence on the same differences; `fixed` tests at its
declared looks with the objective's spending, Holm within a look."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from ttt_lab.stats import betting, signflip, spending
from ttt_lab.stats.design import FIXED, Design
from ttt_lab.stats.pairing import differences, finite, seed_of, upto


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
    lo: float = math.nan
    hi: float = math.nan
    """anytime: the confidence sequence for the difference in collapse rates."""
    p: float = math.nan
    """fixed: the exact p-value at the last look taken."""
    direction: str = ""
    """more | fewer (collapses than the reference) once shown."""

    @property
    def rate(self) -> float:
        return self.collapsed / self.seeds if self.seeds else math.nan

    @property
    def reference_rate(self) -> float:
        return self.reference_collapsed / self.reference_seeds if self.reference_seeds else math.nan

    def as_dict(self) -> dict:
        return finite(asdict(self) | {"rate": self.rate, "reference_rate": self.reference_rate})


def endpoint(values: Mapping[str, Mapping], reference: str, design: Design, declared: bool = True
             ) -> list[Collapse]:
    """Each other condition's collapse rate against the reference's; empty unless declared. A
    reference chosen as the best on the same objective shares alpha over every pair, as the
    objective's comparisons do."""
    if design.collapse_below is None or reference not in values:
        return []
    below = design.collapse_below
    ref = {s: float(v < below) for s, v in values[reference].items()}
    others = [c for c in values if c != reference]
    k = len(values)
    level = design.collapse_alpha / max(1, len(others) if declared else k * (k - 1) // 2)
    out = []
    for c in others:
        arm = {s: float(v < below) for s, v in values[c].items()}
        common = sorted(set(arm) & set(ref))
        paired = bool(common)
        test = ("betting confidence sequence on paired seeds" if design.procedure != FIXED and paired else
                "none (anytime needs paired seeds)" if design.procedure != FIXED else
                "exact McNemar (sign-flip on paired seeds)" if paired else "Boschloo exact (unpaired)")
        out.append(Collapse(c, reference, int(sum(arm.values())), len(arm), int(sum(ref.values())), len(ref), paired,
                            test))
        d = np.array([arm[s] - ref[s] for s in common])
        if design.procedure != FIXED and paired and len(d):
            lo, hi = betting.interval((d + 1) / 2, level)
            out[-1].lo, out[-1].hi = 2 * lo - 1, 2 * hi - 1
            out[-1].direction = "more" if out[-1].lo > 0 else "fewer" if out[-1].hi < 0 else ""
    if design.procedure == FIXED:
        _fixed(out, values, reference, design)
    return out


def _fixed(out: list[Collapse], values, reference: str, design: Design) -> None:
    from scipy.stats import boschloo_exact
    from statsmodels.stats.multitest import multipletests


    below = design.collapse_below
    shares = spending.shares(design.looks, design.collapse_alpha)
    flags = {c: {key: float(v < below) for key, v in vals.items()} for c, vals in values.items()}
    have = min((len({seed_of(key) for key in flags[c]}) for c in flags), default=0)
    taken = [n for n in design.looks if n <= have]

    def first(c: str, n: int) -> list[float]:
        keys = sorted(flags[c], key=lambda key: (seed_of(key), str(key)))
        return [flags[c][key] for key in keys][:upto([seed_of(key) for key in keys], n)]

    for k, n in enumerate(taken):
        ps, signs = [], []
        for r in out:
            a, b = first(r.condition, n), first(reference, n)
            if r.paired:
                d_all, _, seeds = differences(flags[r.condition], flags[reference])
                d = d_all[:upto(seeds, n)]
                ps.append(float(signflip.p_values(np.array([d]))[0]) if d else 1.0)
                signs.append(float(np.sign(sum(d))))
            else:
                table = [[sum(a), len(a) - sum(a)], [sum(b), len(b) - sum(b)]]
                ps.append(float(boschloo_exact(table).pvalue) if len(a) and len(b) else 1.0)
                signs.append(float(np.sign(sum(a) / max(1, len(a)) - sum(b) / max(1, len(b)))))
        reject = multipletests(ps, alpha=shares[k], method="holm")[0] if ps else []
        for r, p, rej, sign in zip(out, ps, reject, signs, strict=True):
            r.p = p
            if rej and not r.direction and sign:
                r.direction = "more" if sign > 0 else "fewer"
