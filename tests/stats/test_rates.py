"""The intervals and tests behind every number: checked against scipy and by properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sp

from ttt_lab.stats.rates import chi2_sf, mean_interval, normalised_entropy, sign_test, wilson


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_holds_the_rate_inside_zero_one(k: int, n: int) -> None:
    k = min(k, n)
    lo, hi = wilson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert hi - lo > 0, "never a zero-width interval, even at 0 or n successes"


@given(st.integers(0, 300), st.integers(1, 300))
def test_wilson_is_scipys_wilson_interval(k: int, n: int) -> None:
    k = min(k, n)
    ci = sp.binomtest(k, n).proportion_ci(method="wilson")
    assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_wilson_narrows_with_more_games() -> None:
    lo, hi = wilson(72, 100)
    assert wilson(720, 1000)[1] - wilson(720, 1000)[0] < hi - lo
    assert wilson(0, 0) == (0.0, 1.0)


@given(st.lists(st.floats(0, 1), min_size=2, max_size=40))
def test_mean_interval_is_scipys_student_t_interval(values: list[float]) -> None:
    mean, lo, hi = mean_interval(values)
    sem = sp.sem(values)
    if sem > 0:
        want = sp.t.interval(0.95, len(values) - 1, loc=sum(values) / len(values), scale=sem)
        assert (lo, hi) == pytest.approx(want, abs=1e-9)
    assert lo <= mean <= hi


def test_student_t_is_used_past_thirty_degrees_of_freedom() -> None:
    values = [0.0, 1.0] * 20
    _, lo, hi = mean_interval(values)
    half = (hi - lo) / 2
    z_half = 1.959963984540054 * sp.sem(values)
    assert half > z_half, "t (39 df) is wider than z"


@given(st.floats(0.01, 60), st.integers(1, 30))
def test_chi2_tail_matches_scipy(x: float, df: int) -> None:
    assert math.isclose(chi2_sf(x, df), sp.chi2.sf(x, df), rel_tol=1e-7, abs_tol=1e-12)


def test_entropy_is_one_for_uniform_and_zero_for_one_outcome() -> None:
    assert normalised_entropy([5, 5, 5]) == pytest.approx(1.0)
    assert normalised_entropy([9, 0, 0]) == 0.0
    assert 0 < normalised_entropy([8, 1, 1]) < 1


@given(st.lists(st.floats(0, 1), min_size=2, max_size=10))
def test_a_rate_s_interval_stays_within_zero_and_one_and_is_the_t_interval_clipped(values: list[float]) -> None:
    mean, lo, hi = mean_interval(values, (0.0, 1.0))
    _, tlo, thi = mean_interval(values)
    assert 0.0 <= lo <= mean <= hi <= 1.0
    assert (lo, hi) == (max(tlo, 0.0), min(thi, 1.0))


@given(st.integers(0, 300), st.integers(0, 300))
def test_sign_test_is_scipys_exact_binomial_test(better: int, worse: int) -> None:
    expected = 1.0 if better + worse == 0 else sp.binomtest(better, better + worse, 0.5).pvalue
    assert sign_test(better, worse) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert sign_test(better, worse) == sign_test(worse, better)


def test_sign_test_on_a_hundred_thousand_paired_games_is_exact_and_fast() -> None:
    import time

    sign_test(1, 1)  # scipy's import is not the test's business
    start = time.process_time()
    p = sign_test(50_400, 49_600)
    took = time.process_time() - start
    assert p == pytest.approx(sp.binomtest(50_400, 100_000, 0.5).pvalue, rel=1e-9)
    assert 0.01 < p < 0.02
    assert took < 0.5, f"the exact sign test took {took:.2f} s of CPU at 100,000 games (a sum over terms is quadratic)"


@given(st.integers(0, 10_000), st.integers(1, 10_000), st.floats(0.5, 3.5))
def test_wilson_at_another_level_is_scipys_at_that_confidence(k: int, n: int, z: float) -> None:
    k = min(k, n)
    level = 2 * sp.norm.cdf(z) - 1
    ci = sp.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson(k, n, z) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert wilson(0, n, z)[0] == 0.0 and wilson(n, n, z)[1] == 1.0


def test_chi2_tail_has_no_tail_without_deviation_or_degrees_of_freedom() -> None:
    assert chi2_sf(0.0, 3) == 1.0 and chi2_sf(5.0, 0) == 1.0
    assert chi2_sf(1e4, 2) == pytest.approx(sp.chi2.sf(1e4, 2), abs=1e-300)
