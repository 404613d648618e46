"""A reduced calibration (benchmarks/bench_decisions.py runs the full one): each procedure's false
"differs" and false "equivalent" stay within alpha plus three Monte Carlo standard errors on every
shape, and it decides when there is something to decide."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ttt_lab.stats import calibration, simulate
from ttt_lab.stats.findings import shapes as finding_shapes

STUDIES = 1500
ALPHA = 0.05
LIMIT = ALPHA + 3 * (ALPHA * (1 - ALPHA) / STUDIES) ** 0.5
SHAPES = {
    "gaussian+": (simulate.Shape("gaussian+", 0.05, simulate.gaussian(0.5)), 160),
    "gaussian-": (simulate.Shape("gaussian-", 0.05, simulate.gaussian(-0.5)), 160),
    "three-valued": (simulate.Shape("three-valued", 0.1, simulate.three_valued), 160),
    "collapse": (simulate.Shape("collapse", 0.05, simulate.collapsing), 160),
}


@pytest.mark.parametrize("procedure", ["anytime", "fixed"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_false_decisions_stay_within_alpha(procedure: str, shape: str) -> None:
    s, n = SHAPES[shape]
    r = calibration.calibrate(s, procedure, studies=STUDIES, seeds=n, looks=[6, 12, 24, 48, 96, n], seed=1)
    assert r.false_differs <= LIMIT and r.false_equivalent <= LIMIT, r


def test_the_findings_resampled_under_the_null_keep_alpha() -> None:
    root = Path(__file__).parents[2] / "docs" / "findings"
    for s in finding_shapes(root):
        for procedure in ("anytime", "fixed"):
            r = calibration.calibrate(s, procedure, studies=600, seeds=48, looks=[6, 12, 24, 48], seed=2)
            assert r.false_differs <= ALPHA + 3 * (ALPHA * (1 - ALPHA) / 600) ** 0.5, r


@pytest.mark.parametrize("procedure", ["anytime", "fixed"])
def test_a_difference_of_twice_the_margin_is_found(procedure: str) -> None:
    s, _ = SHAPES["gaussian+"]
    r = calibration.calibrate(s, procedure, studies=STUDIES, seeds=200, looks=[6, 12, 24, 48, 96, 200], seed=4)
    assert r.power >= 0.8 and np.isfinite(r.seeds_for_power)
