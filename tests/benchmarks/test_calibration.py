"""A reduced calibration (benchmarks/bench_decisions.py runs the full one): each endpoint's false
decisions on its own nulls, both skewed ones included, stay within its share of alpha plus three
Monte Carlo standard errors, and a clear difference is found."""

from __future__ import annotations

import pytest

from benchmarks.calibration import calibrate as cal
from benchmarks.calibration import simulate as sim

STUDIES = 1000
CASES = {
    "skewed pairs, equal means": sim.Case("skewed", sim.skewed_equal_means, (sim.MEAN,)),
    "mirror: P(improvement) 1/2, means differ": sim.Case("mirror", sim.mirror, (sim.IMPROVEMENT,)),
    "bimodal, opposed, three-valued": sim.Case("three", sim.three_valued, (sim.IMPROVEMENT, sim.MEAN, sim.COLLAPSE),
                                               margin=0.1, collapse_below=0.4),
}


@pytest.mark.parametrize("procedure", ["anytime", "fixed"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_false_decisions_stay_within_each_endpoints_share(procedure: str, case: str) -> None:
    r = cal.calibrate(CASES[case], procedure, studies=STUDIES, seeds=24, looks=[6, 12, 18, 24], seed=1)
    assert r.ok(), r


def test_the_skewed_nulls_are_what_they_claim() -> None:
    """The skewed pairs have equal means and a probability of improvement of 0.2; the mirror pairs
    the reverse: a decision on the other endpoint there is right, so each null tests one endpoint."""
    import numpy as np

    rng = np.random.default_rng(0)
    v = sim.skewed_equal_means(rng, 4000, 2, 30)
    d = v[:, 1] - v[:, 0]
    assert abs(d.mean()) < 0.005 and abs((d > 0).mean() - 0.2) < 0.01
    w = sim.mirror(rng, 4000, 2, 30)
    e = w[:, 1] - w[:, 0]
    assert abs((e > 0).mean() - 0.5) < 0.01 and e.mean() < -0.1


def test_seeds_that_mostly_agree_are_decided() -> None:
    case = sim.Case("0.9", sim.signs(0.9), ())
    n = cal.seeds_to_decide(case, studies=1000, seeds=40)
    sign = cal.sign_test_seeds(0.9, 0.04)
    assert sign is not None and n <= 1.5 * sign
