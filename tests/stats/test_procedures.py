"""The decision procedures on per-seed values: each defect the statistical review found, and the
properties every valid procedure here must keep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.stats import betting, projection, rules, signflip, spending
from ttt_lab.stats.decide import DIFFERS, EQUIVALENT, UNRESOLVED, WITHIN, decide
from ttt_lab.stats.design import ANYTIME, FIXED, Design

small = st.floats(-1, 1, allow_nan=False)


def _values(*arms: list[float]) -> dict[str, dict[int, float]]:
    return {f"c{i}": dict(enumerate(v)) for i, v in enumerate(arms)}


@pytest.mark.parametrize("procedure", [ANYTIME, FIXED])
@pytest.mark.parametrize("gap", [0.0, 0.02, 0.3])
def test_constant_differences_decide_nothing_at_three_seeds(procedure: str, gap: float) -> None:
    """No spread is not certainty: three identical differences settle nothing (the old t rule read
    p = 0 and a zero-width interval)."""
    design = Design(procedure, 0.05, looks=(3,) if procedure == FIXED else ())
    got = decide(_values([0.8] * 3, [0.8 + gap] * 3), reference="c0", declared=True, metric="m", design=design,
                 looks=[3])
    (c,) = got.comparisons
    assert c.decision == UNRESOLVED and c.lo < c.difference < c.hi


def _statsmodels_holm(ps, level: float) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' Holm correction: which hypotheses it rejects, and the corrected p-values. Its
    Holm branch ends in gc.collect(), in a test process that holds torch and the rest half a
    second a call and no part of the answer: that is left out."""
    from unittest import mock

    from statsmodels.stats.multitest import multipletests

    with mock.patch("gc.collect"):
        reject, corrected, _, _ = multipletests(ps, alpha=level, method="holm")
    return reject, corrected


def test_holm_is_step_down_and_stops_at_the_first_non_rejection() -> None:
    p = np.array([0.020, 0.022, 0.040])
    assert not rules.holm_reject(p, 0.05).any()
    assert _statsmodels_holm(p, 0.05)[1] == pytest.approx([0.06, 0.06, 0.06])
    # a larger p is never rejected while a smaller one is not
    assert list(rules.holm_reject(np.array([0.01, 0.04, 0.03]), 0.05)) == [True, False, False]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=6), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_matches_statsmodels(ps: list[float], level: float) -> None:
    assert list(rules.holm_reject(np.array(ps), level)) == list(_statsmodels_holm(ps, level)[0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=9))
def test_the_vectorised_sign_flip_test_is_scipys_exact_permutation_test(d: list[float]) -> None:
    assert signflip.p_values(np.array([d]))[0] == pytest.approx(signflip.p_value(d), abs=1e-12)


def test_the_sign_flip_floor_is_two_to_the_one_minus_n() -> None:
    for n in range(1, 10):
        assert signflip.p_values(np.full((1, n), 0.3))[0] == pytest.approx(signflip.floor(n))
    assert signflip.seeds_to_reach(0.05) == 6


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_evidence_that_the_mean_exceeds_m_falls_as_m_rises(y: list[float], m1: float, m2: float) -> None:
    """The bets do not depend on m and each factor falls in m: the confidence set is an interval and
    a claim beyond a point errs only when the true mean's own process crossed."""
    lo, hi = sorted((m1, m2))
    up, down = betting.log_capital(np.array(y), np.array([lo, hi]), 0.05)
    assert (up[:, 0] >= up[:, 1] - 1e-12).all() and (down[:, 0] <= down[:, 1] + 1e-12).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_the_interval_holds_the_running_mean_of_few_seeds(y: list[float]) -> None:
    lo, hi = betting.interval(np.array(y), 0.05)
    assert 0 <= lo <= hi <= 1
    if len(y) <= 5:  # five seeds in [0, 1] cannot exclude their own mean at 95 %
        assert lo <= float(np.mean(y)) + 1e-3 and float(np.mean(y)) - 1e-3 <= hi


def test_a_difference_inside_the_margin_is_real_but_does_not_matter() -> None:
    rng = np.random.default_rng(0)
    ref = list(rng.uniform(0.80, 0.84, 400))
    arm = [r + 0.02 for r in ref]
    got = decide(_values(ref, arm), reference="c0", declared=True, metric="m", design=Design(ANYTIME, 0.1))
    assert got.comparisons[0].decision == WITHIN and got.comparisons[0].direction == "higher"
    big = decide(_values(ref, [r + 0.4 for r in ref]), reference="c0", declared=True, metric="m",
                 design=Design(ANYTIME, 0.1))
    assert big.comparisons[0].decision == DIFFERS and big.comparisons[0].lo > 0.1
    same = decide(_values(ref, ref), reference="c0", declared=True, metric="m", design=Design(ANYTIME, 0.1))
    assert same.comparisons[0].decision == EQUIVALENT


def test_without_a_declared_baseline_every_pair_shares_the_error_rate() -> None:
    values = _values([0.5] * 8, [0.6] * 8, [0.7] * 8, [0.8] * 8)
    chosen = decide(values, reference="c3", declared=False, metric="m", design=Design())
    declared = decide(values, reference="c3", declared=True, metric="m", design=Design())
    assert chosen.family == 6 and declared.family == 3
    assert {c.condition for c in chosen.comparisons} == {"c0", "c1", "c2"}
    assert all(c.reference == "c3" for c in chosen.comparisons)
    assert chosen.comparisons[0].level == pytest.approx(0.05 / 6)


def test_fixed_records_the_error_spent_by_each_look_from_its_declared_looks() -> None:
    looks = (6, 9, 12)
    design = Design(FIXED, 0.05, looks=looks)
    got = decide(_values([0.5] * 9, [0.9] * 9), reference="c0", declared=True, metric="m", design=design)
    assert got.looks == [6, 9]
    expected = [spending.spent(6, 12, 0.05), spending.spent(9, 12, 0.05)]
    assert got.spent == pytest.approx(expected)
    assert sum(spending.shares(looks, 0.05)) == pytest.approx(0.05)
    assert got.comparisons[0].direction == "higher"  # 9 of 9 seeds agree: p = 2^-8 at look 9


def test_a_projection_is_a_chance_that_grows_with_the_looks_and_needs_three_seeds() -> None:
    design = Design(ANYTIME, 0.1)
    strong = projection.chances([0.5, 0.55, 0.45, 0.5], design, level=0.05, ahead=[8, 16, 32, 64])
    chances = [p for _, p in strong]
    assert chances == sorted(chances) and chances[-1] > 0.9 and chances[0] < chances[-1]
    assert projection.chances([0.5, 0.5], design, level=0.05, ahead=[8]) == []
    noisy = projection.chances([0.3, -0.4, 0.2, -0.1], design, level=0.05, ahead=[8, 16])
    assert all(p < 0.5 for _, p in noisy)


@settings(max_examples=30, deadline=None)
@given(st.lists(small, min_size=2, max_size=12))
def test_a_decision_is_one_of_four_and_its_interval_holds_its_claims(d: list[float]) -> None:
    got = decide({"r": {i: 0.0 for i in range(len(d))}, "a": {i: x for i, x in enumerate(d)}}, reference="r",
                 declared=True, metric="m", design=Design(ANYTIME, 0.1, bounds=(-1.0, 1.0)))
    (c,) = got.comparisons
    assert c.decision in (DIFFERS, WITHIN, EQUIVALENT, UNRESOLVED)
    assert c.lo <= c.hi and math.isfinite(c.lo)
    if c.decision == DIFFERS:
        assert c.lo > 0.1 - 1e-3 or c.hi < -0.1 + 1e-3


@pytest.mark.parametrize("procedure", [ANYTIME, FIXED])
def test_a_declared_collapse_threshold_compares_collapse_rates_at_its_own_alpha(procedure: str) -> None:
    rng = np.random.default_rng(0)
    ref = {s: (0.4 if rng.random() < 0.6 else 0.85) for s in range(40)}
    arm = {s: (0.4 if rng.random() < 0.05 else 0.88) for s in range(40)}
    design = Design(procedure, 0.05, looks=(10, 20, 40) if procedure == FIXED else (), collapse_below=0.6,
                    collapse_alpha=0.01)
    got = decide({"ref": ref, "arm": arm}, reference="ref", declared=True, metric="m", design=design)
    (r,) = got.collapse
    assert r.collapsed == sum(v < 0.6 for v in arm.values()) and r.reference_collapsed == sum(
        v < 0.6 for v in ref.values())
    assert r.paired and r.direction == "fewer"
    assert got.comparisons[0].level == pytest.approx(0.04)  # the objective keeps alpha minus the endpoint's share
    none = decide({"ref": ref, "arm": arm}, reference="ref", declared=True, metric="m", design=Design(procedure, 0.05,
                  looks=(10, 20, 40) if procedure == FIXED else ()))
    assert none.collapse == []


def test_collapse_at_three_seeds_shows_nothing() -> None:
    design = Design(FIXED, 0.05, looks=(3,), collapse_below=0.6, collapse_alpha=0.01)
    got = decide(_values([0.4] * 3, [0.9] * 3), reference="c0", declared=True, metric="m", design=design)
    assert got.collapse[0].direction == "" and got.collapse[0].p == pytest.approx(0.25)


def test_blocked_runs_are_ordered_seed_by_seed_and_looks_count_seeds() -> None:
    """(block, seed) keys: the sequence grows only at its end as seeds are added, and a fixed
    look at n seeds takes n seeds of every block, not the first n entries."""
    from ttt_lab.stats.pairing import differences, upto

    a = {("w0", s): 0.9 for s in range(3)} | {("w1", s): 0.8 for s in range(3)}
    b = {("w0", s): 0.5 for s in range(3)} | {("w1", s): 0.6 for s in range(3)}
    d, paired, seeds = differences(a, b)
    assert paired and seeds == [0, 0, 1, 1, 2, 2]
    assert d == pytest.approx([0.4, 0.2] * 3)
    assert upto(seeds, 2) == 4 and upto(seeds, 5) == 6
    more = differences(a | {("w0", 3): 0.9, ("w1", 3): 0.8}, b | {("w0", 3): 0.5, ("w1", 3): 0.6})[0]
    assert more[:6] == d  # adding a seed extends the sequence, never reorders it
    design = Design(FIXED, 0.05, looks=(2, 3))
    got = decide({"r": b, "a": a}, reference="r", declared=True, metric="m", design=design)
    assert got.looks == [2, 3] and got.comparisons[0].seeds == 6
