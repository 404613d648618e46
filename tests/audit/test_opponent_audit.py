import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.audit.checks import FAIL, PASS, SKIP
from ttt_lab.audit.opponent import audit_opponent
from ttt_lab.config.build import opponent_factory
from ttt_lab.config.schema import OpponentAuditConfig, OpponentConfig
from ttt_lab.stats.rates import chi2_sf

TIE_CHECKS = ("tie_break.dominated_share", "tie_break.entropy", "tie_break.chi2_p")
USER = "tests.audit.user_opponents."


def run(cfg: OpponentConfig, **audit):
    a = dataclasses.replace(OpponentAuditConfig(), **audit)
    return audit_opponent(cfg, opponent_factory(cfg), a, seed=0)


@pytest.mark.parametrize("tie_break", ["first", "last"])
@pytest.mark.parametrize("scoring", ["value", "fast"])
def test_deterministic_tie_breakers_fail_the_tie_break_and_symmetry_checks(tie_break, scoring):
    audit = run(OpponentConfig(tie_break=tie_break, scoring=scoring), processes=False)
    assert audit.status == FAIL
    for name in (*TIE_CHECKS, "cell_preference.tv", "symmetry.chi2_p"):
        assert audit.check(name).status == FAIL, name
    assert audit.check("optimality").status == PASS
    assert audit.check("tie_break.dominated_share").value == 1.0


@pytest.mark.parametrize("scoring", ["value", "fast"])
def test_random_tie_breaking_passes_everything(scoring):
    audit = run(OpponentConfig(tie_break="random", scoring=scoring))
    assert audit.status == PASS, [(c.name, c.status, c.detail) for c in audit.checks]
    assert audit.check("tie_break.dominated_share").value == 0.0
    assert audit.check("seed_consistency").value == 0
    assert "fresh process: 0 differ" in audit.check("seed_consistency").detail


def test_noise_calibration_measures_the_configured_probability():
    audit = run(OpponentConfig(p_random=0.2), processes=False)
    c = audit.check("noise_calibration")
    assert c.status == PASS
    assert abs(c.value - 0.2) < 0.01


def test_random_opponent_skips_what_does_not_apply():
    audit = run(OpponentConfig(_target_="ttt_lab.game.opponents.RandomOpponent", p_random=1.0), processes=False)
    assert audit.check("optimality").status == SKIP
    assert audit.check("noise_calibration").status == SKIP
    assert audit.check("tie_break.chi2_p").status == PASS


def test_user_defined_first_choice_opponent_fails_like_the_builtin():
    audit = run(OpponentConfig(_target_=USER + "FirstChoiceOpponent"))
    for name in TIE_CHECKS:
        assert audit.check(name).status == FAIL
    assert audit.check("noise_calibration").status == SKIP  # the class takes no p_random
    assert audit.check("seed_consistency").status == PASS


def test_user_defined_fair_opponent_passes_across_processes():
    audit = run(OpponentConfig(_target_=USER + "FairOpponent", p_random=0.25), seeds=32)
    assert audit.status == PASS, [(c.name, c.status, c.detail) for c in audit.checks]


def test_miscalibrated_noise_fails():
    audit = run(OpponentConfig(_target_=USER + "HalfNoiseOpponent", p_random=0.4), seeds=32, processes=False)
    assert audit.check("noise_calibration").status == FAIL
    assert audit.check("noise_calibration").value == pytest.approx(0.2, abs=0.02)


def test_careless_opponent_fails_optimality():
    audit = run(OpponentConfig(_target_=USER + "CarelessOpponent"), seeds=16, processes=False)
    c = audit.check("optimality")
    assert c.status == FAIL and c.value < 1.0


def test_unseeded_opponent_fails_seed_consistency():
    audit = run(OpponentConfig(_target_=USER + "UnseededOpponent"), seeds=16)
    assert audit.check("seed_consistency").status == FAIL
    assert audit.check("seed_consistency").value > 0


def test_per_game_seeding_warns():
    audit = run(OpponentConfig(seeding="per_game"), seeds=8, processes=False)
    assert audit.check("episode_seeding").status == "WARN"


@given(st.floats(0.01, 5000), st.integers(1, 3000))
def test_chi2_tail_matches_scipy(x, df):
    scipy_stats = pytest.importorskip("scipy.stats")
    assert chi2_sf(x, df) == pytest.approx(scipy_stats.chi2.sf(x, df), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize(("name", "status", "tie_set"), [
    ("FastFairOpponent", PASS, "fast"),
    ("FastFirstOpponent", FAIL, "fast"),
    ("FirstChoiceOpponent", FAIL, "value"),
    ("FairOpponent", PASS, "value"),
])
def test_the_audit_finds_the_set_a_user_class_draws_from(name: str, status: str, tie_set: str) -> None:
    """Fair means uniform within the set of best moves an opponent draws from, whether that is
    every value-keeping move or the fastest-win subset; the config's `scoring` is not asked."""
    audit = run(OpponentConfig(_target_=USER + name), processes=False)
    assert audit.data["tie_set"] == tie_set
    assert all(audit.check(n).status == status for n in TIE_CHECKS), [(c.name, c.status) for c in audit.checks]
    assert tie_set in ("fast", "value") and audit.check("tie_break.set").status == PASS


def test_the_built_in_fast_scoring_opponent_is_found_drawing_from_the_fastest_moves() -> None:
    assert run(OpponentConfig(scoring="fast"), processes=False).data["tie_set"] == "fast"
    assert run(OpponentConfig(scoring="value"), processes=False).data["tie_set"] == "value"


def test_the_built_in_exploiting_opponent_is_found_drawing_from_its_own_subset_and_fair_within_it() -> None:
    audit = run(OpponentConfig(scoring="exploit"), processes=False)
    assert audit.data["tie_set"] == "exploit"
    assert all(audit.check(n).status == PASS for n in TIE_CHECKS), [(c.name, c.status) for c in audit.checks]
