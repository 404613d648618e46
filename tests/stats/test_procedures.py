"""The decision procedures on per-seed values: each defect the statistical review found, and the
properties every valid procedure here must keep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.stats import betting, improvement, projection, rules, spending
from ttt_lab.stats.decide import BETTER, DIFFERS, EQUIVALENT, UNRESOLVED, WITHIN, WORSE, decide
from ttt_lab.stats.design import ANYTIME, FIXED, Design

small = st.floats(-1, 1, allow_nan=False)
score = st.sampled_from([0.0, 0.5, 1.0])


def _values(*arms: list[float]) -> dict[str, dict[int, float]]:
    return {f"c{i}": dict(enumerate(v)) for i, v in enumerate(arms)}


@pytest.mark.parametrize("procedure", [ANYTIME, FIXED])
@pytest.mark.parametrize("gap", [0.0, 0.02, 0.3])
def test_constant_differences_decide_nothing_at_three_seeds(procedure: str, gap: float) -> None:
    """No spread is not certainty: three identical differences settle nothing."""
    design = Design(procedure, 0.05, looks=(3,) if procedure == FIXED else ())
    got = decide(_values([0.8] * 3, [0.8 + gap] * 3), reference="c0", declared=True, metric="m", design=design,
                 looks=[3])
    (c,) = got.comparisons
    assert c.decision == UNRESOLVED and c.mean_decision == UNRESOLVED and c.lo < c.difference < c.hi


def test_twelve_of_twelve_seeds_decide_and_nine_of_nine_in_a_family_of_six_say_when() -> None:
    """The memorisation warm-ups' shape (12 of 12, one comparison) decides; batch 512 against 64 at
    fixed updates (9 of 9, every pair of 4 arms) does not yet, and says after how many seeds it
    would if the next seeds agreed too."""
    ref = [0.3 + 0.01 * i for i in range(12)]
    got = decide(_values(ref, [r + 0.2 for r in ref]), reference="c0", declared=True, metric="m", design=Design())
    (c,) = got.comparisons
    assert c.decision == BETTER and c.better == 12 and c.improvement_lo > 0.5
    arms = [[0.2 + 0.01 * i + 0.1 * k for i in range(9)] for k in range(4)]
    six = decide(_values(*arms), reference="c3", declared=False, metric="m", design=Design())
    assert six.family == 6 and all(c.decision == UNRESOLVED and c.worse == 9 for c in six.comparisons)
    assert {c.if_agree for c in six.comparisons} == {improvement.agreeing_to_decide(0.04 / 6)}
    assert all(c.if_agree > 9 for c in six.comparisons)


def _statsmodels_holm(ps, level: float) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' Holm correction (its gc.collect() left out: half a second a call in a process
    holding torch, and no part of the answer)."""
    from unittest import mock

    from statsmodels.stats.multitest import multipletests

    with mock.patch("gc.collect"):
        reject, corrected, _, _ = multipletests(ps, alpha=level, method="holm")
    return reject, corrected


def test_holm_is_step_down_and_stops_at_the_first_non_rejection() -> None:
    p = np.array([0.020, 0.022, 0.040])
    assert not rules.holm_reject(p, 0.05).any()
    assert _statsmodels_holm(p, 0.05)[1] == pytest.approx([0.06, 0.06, 0.06])
    assert list(rules.holm_reject(np.array([0.01, 0.04, 0.03]), 0.05)) == [True, False, False]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=6), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_matches_statsmodels(ps: list[float], level: float) -> None:
    assert list(rules.holm_reject(np.array(ps), level)) == list(_statsmodels_holm(ps, level)[0])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_the_sign_test_is_scipys_exact_binomial_test(better: int, worse: int) -> None:
    from scipy.stats import binomtest

    want = binomtest(better, better + worse, 0.5).pvalue if better + worse else 1.0
    assert rules.sign_p(np.array(better), np.array(worse)) == pytest.approx(want, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 40), min_size=1, max_size=6, unique=True), st.integers(1, 6))
def test_every_look_with_a_share_can_reach_it_and_the_shares_sum_to_alpha(looks: list[int], family: int) -> None:
    """No alpha is spent on a look that cannot reject: a look gets a share only where n seeds that
    all agree reach share / family, else it passes the share on (the last look keeps what is left)."""
    looks = sorted(looks)
    shares = spending.usable_shares(looks, 0.04, family)
    assert sum(shares) == pytest.approx(0.04)
    for n, share in zip(looks[:-1], shares[:-1], strict=True):
        assert share == 0 or rules.sign_p(np.array(n), np.array(0)) <= share / family
    for n, share in zip(looks[:-1], shares[:-1], strict=True):
        if share == 0:
            assert spending.floor(n) > spending.spent(n, looks[-1], 0.04) / family or share == 0


def test_the_fixed_sign_test_passes_early_shares_on_and_decides_at_the_look_it_can() -> None:
    looks = (3, 8, 16)
    shares = spending.usable_shares(looks, 0.04, 1)
    assert shares[0] == 0 and shares[1] == pytest.approx(spending.spent(8, 16, 0.04))  # look 3 passed its share on
    codes, p = rules.sign_test(np.ones((1, 1, 16)), 0.04, looks)
    assert list(codes[0, 0]) == [rules.UNRESOLVED, rules.BETTER, rules.BETTER] and p[0, 0, 1] == pytest.approx(1 / 128)
    assert spending.usable_shares((3, 6, 9), 0.04, 1) == [0.0, 0.0, pytest.approx(0.04)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_evidence_that_the_mean_exceeds_m_falls_as_m_rises(y: list[float], m1: float, m2: float) -> None:
    lo, hi = sorted((m1, m2))
    up, down = betting.log_capital(np.array(y), np.array([lo, hi]), 0.05)
    assert (up[:, 0] >= up[:, 1] - 1e-12).all() and (down[:, 0] <= down[:, 1] + 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(score, min_size=1, max_size=40), st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_evidence_for_improvement_falls_above_and_rises_below_as_m_rises(s: list[float], m1: float,
                                                                          m2: float) -> None:
    """The cell bound is exact because the up mixture falls in m and the down mixture rises."""
    lo, hi = sorted((m1, m2))
    up, down = improvement._log_parts(np.array(s), np.array([lo, hi]))
    assert (up[:, 0] >= up[:, 1] - 1e-9).all() and (down[:, 0] <= down[:, 1] + 1e-9).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_the_interval_holds_the_running_mean_of_few_seeds(y: list[float]) -> None:
    lo, hi = betting.interval(np.array(y), 0.05)
    assert 0 <= lo <= hi <= 1
    if len(y) <= 5:
        assert lo <= float(np.mean(y)) + 1e-3 and float(np.mean(y)) - 1e-3 <= hi


@settings(max_examples=40, deadline=None)
@given(st.lists(small, min_size=1, max_size=16), st.sampled_from([1, 3, 6]), st.sampled_from([0.0, 0.2]))
def test_a_claimed_direction_agrees_with_its_interval(d: list[float], family: int, delta: float) -> None:
    """What the sentence says (better / worse on most seeds, equivalent) holds of the interval
    printed beside it, and decide() gives what the array rule gives at the same level."""
    values = {"r": {i: 0.0 for i in range(len(d))}, "a": {i: x for i, x in enumerate(d)}}
    design = Design(ANYTIME, 0.1, bounds=(-1.0, 1.0), delta=delta)
    (c,) = decide(values, reference="r", declared=True, metric="m", design=design).comparisons
    c_lo, c_hi = c.improvement_lo, c.improvement_hi
    assert 0 <= c_lo <= c.improvement <= c_hi <= 1 or c.decision != UNRESOLVED
    if c.decision == BETTER:  # every value at or below 1/2 excluded: the interval starts at 1/2 or above
        assert c_lo >= 0.5 and c.better > c.worse
    if c.decision == WORSE:
        assert c_hi <= 0.5 and c.worse > c.better
    if c.decision == EQUIVALENT:
        assert delta > 0 and 0.5 - delta <= c_lo and c_hi <= 0.5 + delta
    code = rules.improvement_codes(improvement.scores(np.array(d)), 0.04, delta)[-1]
    assert c.decision == rules.NAMES[int(code)]
    assert c.mean_decision in (DIFFERS, WITHIN, EQUIVALENT, UNRESOLVED)
    if c.mean_decision == DIFFERS:
        assert c.lo > 0.1 - 1e-3 or c.hi < -0.1 + 1e-3


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(score, min_size=12, max_size=12), min_size=1, max_size=3))
def test_decide_gives_what_the_fixed_array_rule_gives(arms: list[list[float]]) -> None:
    looks = (4, 8, 12)
    ref = {i: 0.5 for i in range(12)}
    values = {"r": ref} | {f"a{k}": {i: v for i, v in enumerate(a)} for k, a in enumerate(arms)}
    got = decide(values, reference="r", declared=True, metric="m", design=Design(FIXED, looks=looks), looks=looks)
    codes, _ = rules.sign_test(np.array(arms)[None], Design().improvement_alpha, looks)
    assert [c.decision for c in got.comparisons] == [rules.NAMES[int(k)] for k in codes[0, :, -1]]


def test_a_difference_inside_the_margin_is_real_but_does_not_matter() -> None:
    rng = np.random.default_rng(0)
    ref = list(rng.uniform(0.80, 0.84, 400))
    got = decide(_values(ref, [r + 0.02 for r in ref]), reference="c0", declared=True, metric="m",
                 design=Design(ANYTIME, 0.1))
    assert got.comparisons[0].mean_decision == WITHIN and got.comparisons[0].direction == "higher"
    assert got.comparisons[0].decision == BETTER
    big = decide(_values(ref, [r + 0.4 for r in ref]), reference="c0", declared=True, metric="m",
                 design=Design(ANYTIME, 0.1))
    assert big.comparisons[0].mean_decision == DIFFERS and big.comparisons[0].lo > 0.1
    same = decide(_values(ref, ref), reference="c0", declared=True, metric="m", design=Design(ANYTIME, 0.1))
    assert same.comparisons[0].mean_decision == EQUIVALENT and same.comparisons[0].decision == UNRESOLVED


def test_a_minimised_objective_counts_lower_as_better() -> None:
    ref = [0.5 + 0.01 * i for i in range(12)]
    got = decide(_values(ref, [r - 0.2 for r in ref]), reference="c0", declared=True, metric="m",
                 design=Design(bounds=(-1.0, 1.0)), maximize=False)
    assert got.comparisons[0].decision == BETTER and got.comparisons[0].difference < 0


def test_without_a_declared_baseline_every_pair_shares_the_error_rate() -> None:
    values = _values([0.5] * 8, [0.6] * 8, [0.7] * 8, [0.8] * 8)
    chosen = decide(values, reference="c3", declared=False, metric="m", design=Design())
    declared = decide(values, reference="c3", declared=True, metric="m", design=Design())
    assert chosen.family == 6 and declared.family == 3
    assert {c.condition for c in chosen.comparisons} == {"c0", "c1", "c2"}
    assert all(c.reference == "c3" and c.decision in (WORSE, UNRESOLVED) for c in chosen.comparisons)
    assert chosen.comparisons[0].level == pytest.approx(0.04 / 6)
    assert chosen.comparisons[0].mean_level == pytest.approx(0.01 / 6)


def test_fixed_records_the_error_spent_by_each_look_from_its_declared_looks() -> None:
    looks = (6, 9, 12)
    design = Design(FIXED, 0.05, looks=looks)
    got = decide(_values([0.5] * 9, [0.9] * 9), reference="c0", declared=True, metric="m", design=design)
    assert got.looks == [6, 9]
    shares = spending.usable_shares(looks, 0.04, 1)
    assert got.spent == pytest.approx(list(np.cumsum(shares[:2])))
    assert got.comparisons[0].decision == BETTER  # 9 of 9 seeds agree: p = 2^-8 at look 9


def test_a_projection_is_a_chance_that_grows_with_the_looks_and_needs_three_seeds() -> None:
    design = Design(ANYTIME, 0.1)
    strong = projection.chances([0.5, 0.55, -0.1, 0.5], design, level=0.04, ahead=[8, 16, 32, 64])
    chances = [p for _, p in strong]
    assert chances == sorted(chances) and chances[-1] > 0.6 and chances[0] < chances[-1]
    assert projection.chances([0.5, 0.5], design, level=0.04, ahead=[8]) == []
    noisy = projection.chances([0.3, -0.4, 0.2, -0.1], design, level=0.04, ahead=[8, 16])
    assert all(p < 0.5 for _, p in noisy)


@pytest.mark.parametrize("procedure", [ANYTIME, FIXED])
def test_a_declared_collapse_threshold_decides_on_the_discordant_seeds(procedure: str) -> None:
    rng = np.random.default_rng(0)
    ref = {s: (0.4 if rng.random() < 0.6 else 0.85) for s in range(40)}
    arm = {s: (0.4 if rng.random() < 0.05 else 0.88) for s in range(40)}
    design = Design(procedure, 0.05, looks=(10, 20, 40) if procedure == FIXED else (), collapse_below=0.6,
                    collapse_alpha=0.01)
    got = decide({"ref": ref, "arm": arm}, reference="ref", declared=True, metric="m", design=design)
    (r,) = got.collapse
    assert r.collapsed == sum(v < 0.6 for v in arm.values()) and r.reference_collapsed == sum(
        v < 0.6 for v in ref.values())
    assert r.only_reference == sum(ref[s] < 0.6 <= arm[s] for s in ref)
    assert r.paired and r.direction == "fewer" and r.needed == improvement.agreeing_to_decide(0.01)
    assert got.comparisons[0].level == pytest.approx(0.03)  # alpha less the mean's and the collapse's shares
    none = decide({"ref": ref, "arm": arm}, reference="ref", declared=True, metric="m", design=Design(procedure, 0.05,
                  looks=(10, 20, 40) if procedure == FIXED else ()))
    assert none.collapse == []


def test_five_discordant_seeds_decide_no_collapse() -> None:
    design = Design(ANYTIME, 0.05, collapse_below=0.6, collapse_alpha=0.01)
    got = decide(_values([0.4] * 5, [0.9] * 5), reference="c0", declared=True, metric="m", design=design)
    (r,) = got.collapse
    assert r.only_reference == 5 and r.direction == "" and r.needed > 5


def test_blocked_runs_are_ordered_seed_by_seed_and_looks_count_seeds() -> None:
    """(block, seed) keys: the sequence grows only at its end as seeds are added, and a fixed look
    at n seeds takes n seeds of every block, not the first n entries."""
    from ttt_lab.stats.pairing import differences, upto

    a = {("w0", s): 0.9 for s in range(3)} | {("w1", s): 0.8 for s in range(3)}
    b = {("w0", s): 0.5 for s in range(3)} | {("w1", s): 0.6 for s in range(3)}
    d, paired, seeds = differences(a, b)
    assert paired and seeds == [0, 0, 1, 1, 2, 2]
    assert d == pytest.approx([0.4, 0.2] * 3)
    assert upto(seeds, 2) == 4 and upto(seeds, 5) == 6
    more = differences(a | {("w0", 3): 0.9, ("w1", 3): 0.8}, b | {("w0", 3): 0.5, ("w1", 3): 0.6})[0]
    assert more[:6] == d
    design = Design(FIXED, 0.05, looks=(2, 3))
    got = decide({"r": b, "a": a}, reference="r", declared=True, metric="m", design=design)
    assert got.looks == [2, 3] and got.comparisons[0].seeds == 6 and got.comparisons[0].better == 6


def test_an_interval_is_the_whole_range_before_any_seed_and_finite_after() -> None:
    assert improvement.interval(np.array([]), 0.05) == (0.0, 1.0)
    lo, hi = improvement.interval(np.array([1.0, 0.5]), 0.05)
    assert 0 <= lo < 0.75 < hi <= 1 and math.isfinite(lo)
