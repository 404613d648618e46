"""The decision rule on synthetic per-seed values (no training): error rates under repeated looks,
power, equivalence, and what pairing buys."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.studies.decision import DIFFERS, EQUIVALENT, UNRESOLVED, Sequential, decide, look_levels, spent

MARGIN = 0.05
SIMULATIONS = 2000


def sequential(rng: np.random.Generator, delta: float, *, sd: float, seed_sd: float, start: int, step: int,
               max_seeds: int) -> str:
    """One simulated --until-settled study of two conditions sharing seeds: add `step` seeds per
    look until the comparison is settled or `max_seeds` is reached; the final decision."""
    seed_effect = rng.normal(0, seed_sd, max_seeds)
    a = seed_effect + rng.normal(0, sd, max_seeds) + delta
    b = seed_effect + rng.normal(0, sd, max_seeds)
    seq = Sequential(["a", "ref"], "ref", metric="m", margin=MARGIN, max_seeds=max_seeds)
    cond = {"a": dict(enumerate(a)), "ref": dict(enumerate(b))}
    n = start
    while not seq.look(cond, n) and n < max_seeds:
        n = min(max_seeds, n + step)
    return seq.comparisons["a"].decision


def rates(delta: float, *, max_seeds: int, sd: float = MARGIN, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    got = [sequential(rng, delta, sd=sd, seed_sd=0.2, start=3, step=3, max_seeds=max_seeds)
           for _ in range(SIMULATIONS)]
    return {d: got.count(d) / SIMULATIONS for d in (DIFFERS, EQUIVALENT, UNRESOLVED)}


MC = 3 * (0.05 * 0.95 / SIMULATIONS) ** 0.5  # three Monte Carlo standard errors at 5 %


def test_no_true_difference_rarely_differs_under_repeated_looks() -> None:
    assert rates(0.0, max_seeds=15)[DIFFERS] <= 0.05 + MC


def test_a_difference_of_twice_the_margin_is_found_within_the_seed_budget() -> None:
    assert rates(2 * MARGIN, max_seeds=15, seed=1)[DIFFERS] >= 0.80


def test_no_true_difference_with_a_generous_budget_is_found_equivalent() -> None:
    assert rates(0.0, max_seeds=60, seed=2)[EQUIVALENT] >= 0.80


def test_a_difference_as_large_as_the_margin_is_rarely_called_equivalent() -> None:
    assert rates(MARGIN, max_seeds=60, seed=3)[EQUIVALENT] <= 0.05 + MC


def test_pairing_settles_what_an_unpaired_test_cannot() -> None:
    """A shared seed effect ten times the noise: seed by seed the difference is plain; with the seeds
    shuffled apart (an unpaired design) the seed spread hides it."""
    rng = np.random.default_rng(4)
    seed_effect = rng.normal(0, 0.2, 6)
    a = seed_effect + rng.normal(0, 0.02, 6) + 0.1
    b = seed_effect + rng.normal(0, 0.02, 6)
    (paired,) = decide({"a": dict(enumerate(a)), "ref": dict(enumerate(b))}, "ref", metric="m", margin=MARGIN)
    (unpaired,) = decide({"a": dict(enumerate(a)), "ref": {s + 100: v for s, v in enumerate(b)}}, "ref", metric="m",
                         margin=MARGIN)
    assert paired.paired and paired.decision == DIFFERS and paired.lo > 0
    assert not unpaired.paired and unpaired.decision == UNRESOLVED and unpaired.lo < 0 < unpaired.hi
    assert unpaired.seeds_needed is not None and unpaired.seeds_needed > 6


@given(st.lists(st.integers(2, 40), min_size=1, max_size=8, unique=True), st.integers(40, 100))
def test_looks_never_spend_more_than_alpha(looks: list[int], n_max: int) -> None:
    levels = look_levels(sorted(looks), n_max)
    assert all(x >= 0 for x in levels)
    assert sum(levels) <= spent(n_max, n_max) + 1e-12 <= 0.05 + 1e-12


@settings(max_examples=50)
@given(st.lists(st.floats(0, 1), min_size=3, max_size=12), st.floats(-0.3, 0.3), st.floats(0.01, 0.5))
def test_every_comparison_gets_one_decision_consistent_with_its_interval(values: list[float], shift: float,
                                                                        margin: float) -> None:
    ref = dict(enumerate(values))
    cond = {s: v + shift + 0.01 * (s % 3) for s, v in ref.items()}
    (c,) = decide({"a": cond, "ref": ref}, "ref", metric="m", margin=margin)
    assert c.decision in (DIFFERS, EQUIVALENT, UNRESOLVED)
    if c.decision == DIFFERS:
        assert c.lo > 0 or c.hi < 0
    if c.decision == EQUIVALENT:
        assert -margin < c.lo and c.hi < margin
    assert c.lo <= c.difference + 1e-9 and c.difference <= c.hi + 1e-9
    assert c.difference == pytest.approx(shift + sum(0.01 * (s % 3) for s in ref) / len(ref))
