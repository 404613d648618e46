"""Seeds to settle, projected: the chance that an unresolved comparison's primary endpoint (the
probability of improvement) is decided by each next look, were the study to go on. Future seeds are
drawn from a population resampled from the seeds seen (so the projection carries the uncertainty
of the observed split, not only its size), and each simulated continuation is decided by the same
rule at the level it would really use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ttt_lab.stats import improvement, rules
from ttt_lab.stats.design import FIXED, Design

if TYPE_CHECKING:
    from ttt_lab.stats.decide import Decisions

FUTURES = 400
MIN_SEEDS = 3
"""Fewer seeds say too little about the split to project from: no projection."""


def chances(differences: Sequence[float], design: Design, *, level: float, ahead: Sequence[int],
            maximize: bool = True, seed: int = 0) -> list[tuple[int, float]]:
    """(seeds per condition, chance of a decision by then) for each of `ahead` (`fixed`: its declared
    looks) beyond the seeds seen; empty when there are fewer than MIN_SEEDS seeds to project from."""
    s = improvement.scores(np.asarray(differences, float) * (1 if maximize else -1))
    n = len(s)
    ahead = sorted(a for a in (design.looks if design.procedure == FIXED else ahead) if a > n)
    if n < MIN_SEEDS or not ahead:
        return []
    rng = np.random.default_rng(seed)
    population = s[rng.integers(0, n, (FUTURES, n))]
    future = np.take_along_axis(population, rng.integers(0, n, (FUTURES, ahead[-1] - n)), 1)
    x = np.concatenate([np.broadcast_to(s, (FUTURES, n)), future], 1)
    if design.procedure == FIXED:  # one comparison's share: Bonferroni for Holm, a little low
        codes, _ = rules.sign_test(x[:, None, :], level, design.looks)
        by = {k: codes[:, 0, i] for i, k in enumerate(design.looks)}
        return [(a, float((by[a] != rules.UNRESOLVED).mean())) for a in ahead]
    codes = rules.improvement_codes(x, level, design.delta)
    return [(a, float((codes[:, a - 1] != rules.UNRESOLVED).mean())) for a in ahead]


def project(result: Decisions, budget: int, step: int, *, maximize: bool = True) -> None:
    """Each unresolved comparison's chance of a decision by the next looks, in place (anytime: up
    to four times the budget, in the study's steps; fixed: its declared looks)."""
    for c in result.comparisons:
        if c.decision == "unresolved":
            ahead = range(c.seeds + step, 4 * max(budget, c.seeds) + 1, step)
            c.settle = chances(c.differences, result.design, level=c.level, ahead=list(ahead), maximize=maximize)


def text(settle: list[tuple[int, float]]) -> str:
    """The first few projected chances for people: `12 % by 6, 40 % by 9`."""
    return ", ".join(f"{p:.0%} by {n}" for n, p in settle[:3]) or "-"
