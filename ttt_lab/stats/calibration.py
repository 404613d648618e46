"""The procedures' error rates, power and seeds to a decision, measured on simulated studies.

For each shape: under no true difference the share of studies with any wrong "differs" (or
"differs, within the margin"); with every arm exactly at the margin (the worst case for
equivalence) the share with any wrong "equivalent" (or "within"); at twice the margin the power,
the share decided "differs" in the right direction by the last seed. A study stops at its first
decision, as `--until-settled` does; `anytime` is looked at after every seed (a raised budget only
adds looks, which it allows), `fixed` at its declared looks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ttt_lab.stats import rules
from ttt_lab.stats.design import ANYTIME, FIXED
from ttt_lab.stats.simulate import Shape, differences

CHUNK = 1000
POWER = 0.8


@dataclass(frozen=True)
class Result:
    procedure: str
    shape: str
    studies: int
    comparisons: int
    seeds: int
    """The most seeds a simulated study may run (power is measured there)."""
    false_differs: float
    false_equivalent: float
    power: float
    seeds_to_decide: float
    """Mean seeds at the first decision, at twice the margin, over the studies that decided."""
    direction_power: float
    """At twice the margin: the share whose direction was shown (right) by the last seed."""
    seeds_to_direction: float
    """Mean seeds until the direction was shown, at twice the margin (what AdaStop decides)."""
    seeds_for_power: float
    """The fewest seeds by which 80 % of the studies at twice the margin decided "differs"."""

    def mc_error(self, rate: float) -> float:
        """One Monte Carlo standard error of a rate near `rate` from this many studies."""
        return float(np.sqrt(rate * (1 - rate) / self.studies))


def stops(codes: np.ndarray, directions: np.ndarray, at: Sequence[int] | np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each comparison's first decision along the last axis: (decision, direction, seeds), with
    seeds = inf where none came."""
    decided = codes != rules.UNRESOLVED
    first = np.argmax(decided, -1)
    any_ = decided.any(-1)
    code = np.take_along_axis(codes, first[..., None], -1)[..., 0]
    way = np.take_along_axis(directions, first[..., None], -1)[..., 0]
    seeds = np.where(any_, np.asarray(at)[first], np.inf)
    return np.where(any_, code, rules.UNRESOLVED), way, seeds


def decide_all(x: np.ndarray, margin: float, procedure: str, alpha: float, looks: Sequence[int]) -> tuple:
    """The first decision (decision, direction, seeds) of each comparison, then the first shown
    direction and its seeds."""
    m = x.shape[-2]
    if procedure == ANYTIME:
        codes, ways = rules.anytime(x, margin, alpha / m)
        at: Sequence[int] | np.ndarray = np.arange(1, x.shape[-1] + 1)
    else:
        codes, ways = rules.fixed(x, margin, alpha, looks)
        at = looks
    shown = ways != 0
    first = np.argmax(shown, -1)
    way = np.take_along_axis(ways, first[..., None], -1)[..., 0]
    return (*stops(codes, ways, at), way, np.where(shown.any(-1), np.asarray(at)[first], np.inf))


def calibrate(shape: Shape, procedure: str, *, studies: int, seeds: int, comparisons: int = 1,
              looks: Sequence[int] = (), alpha: float = 0.05, seed: int = 0) -> Result:
    rng = np.random.default_rng(seed)
    width = shape.bounds[1] - shape.bounds[0]
    margin = shape.margin / width
    looks = list(looks) if procedure == FIXED else []
    out: dict[str, Any] = {}
    for label, delta in (("null", 0.0), ("margin", shape.margin), ("power", 2 * shape.margin)):
        parts = []
        for start in range(0, studies, CHUNK):  # bounded memory at thousands of seeds
            size = min(CHUNK, studies - start)
            x = differences(shape.draw(rng, size, comparisons + 1, seeds, delta), width)
            parts.append(decide_all(x, margin, procedure, alpha, looks))
        out[label] = tuple(np.concatenate(p) for p in zip(*(q[:3] for q in parts), strict=True))
        if label == "power":
            out["power_direction"] = np.concatenate([q[3] for q in parts])
            out["power_direction_seeds"] = np.concatenate([q[4] for q in parts])
    code, _, _ = out["null"]
    false_differs = float(np.isin(code, (rules.DIFFERS, rules.WITHIN)).any(-1).mean())
    code, _, _ = out["margin"]
    false_equivalent = float(np.isin(code, (rules.EQUIVALENT, rules.WITHIN)).any(-1).mean())
    code, way, n = out["power"]
    right = (code == rules.DIFFERS) & (way > 0)
    power = float(right.mean())
    decided = np.isfinite(n)
    mean_n = float(n[decided].mean()) if decided.any() else float("inf")
    shown = (way > 0) & np.isin(code, (rules.DIFFERS, rules.WITHIN))
    way_n = out["power_direction_seeds"]
    mean_way = float(way_n[np.isfinite(way_n)].mean()) if np.isfinite(way_n).any() else float("inf")
    by = np.sort(np.where(right, n, np.inf).ravel())
    enough = by[int(np.ceil(POWER * by.size)) - 1]
    return Result(procedure, shape.name, studies, comparisons, seeds, false_differs, false_equivalent, power, mean_n,
                  float(np.maximum(shown, np.isfinite(way_n) & (out["power_direction"] > 0)).mean()), mean_way,
                  float(enough))


def adastop(shape: Shape, *, studies: int, step: int, interims: int, alpha: float = 0.05,
            permutations: int = 10000, seed: int = 0) -> dict[str, float]:
    """AdaStop (Mathieu et al. 2023) on the same shape: `step` seeds per arm per interim, at most
    `interims`; its false "differs" with no true difference, and its power and mean seeds per arm
    to a decision at twice the margin. It has no "equivalent"."""
    from adastop import MultipleAgentsComparator

    rng = np.random.default_rng(seed)
    out = {}
    for label, delta in (("null", 0.0), ("power", 2 * shape.margin)):
        values = shape.draw(rng, studies, 2, step * interims, delta)
        wrong = right = 0
        used = []
        for i in range(studies):
            comp = MultipleAgentsComparator(n=step, K=interims, B=permutations, alpha=alpha, seed=int(i))
            for k in range(interims):
                seen = {"ref": values[i, 0, :step * (k + 1)], "arm": values[i, 1, :step * (k + 1)]}
                comp.partial_compare(seen, verbose=False)
                if comp.is_finished:
                    break
            decision = next(iter(comp.decisions.values()))
            if decision in ("larger", "smaller"):
                used.append(step * (k + 1))
                wrong += label == "null"
                right += label == "power" and decision == "smaller"  # ref minus arm < 0: the arm is larger
        out[label] = (wrong if label == "null" else right) / studies
        out[f"{label}_seeds"] = float(np.mean(used)) if used else float("inf")
    return {"false_differs": out["null"], "power": out["power"], "seeds_to_decide": out["power_seeds"]}
