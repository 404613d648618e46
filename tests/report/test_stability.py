from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.report.stability import flags, rules_text


def curve(values):
    return [(i + 1, float(v)) for i, v in enumerate(values)]


def rising_then(shape: str, n: int = 40):
    """Reward rising to 0.8, then either plateauing or collapsing to 0.2."""
    up = [0.3 + 0.5 * i / (n // 2) for i in range(n // 2)]
    rest = [0.8 + 0.01 * ((i % 3) - 1) for i in range(n - n // 2)] if shape == "plateau" else \
           [max(0.2, 0.8 - 0.1 * i) for i in range(n - n // 2)]
    return up + rest


def test_collapse_fires_on_a_collapse_and_not_on_a_plateau():
    collapsed = flags({"train/reward": curve(rising_then("collapse"))})
    assert [f.rule for f in collapsed] == ["collapse"]
    assert "0.8" in collapsed[0].detail
    assert flags({"train/reward": curve(rising_then("plateau"))}) == []


def test_dead_policy_is_a_collapse_even_without_a_drop():
    n = 10
    out = flags({"train/reward": curve([0.1] * n), "train/reward_std": curve([0.0] * n),
                 "train/entropy": curve([0.01] * n)})
    assert [f.rule for f in out] == ["collapse"]


def test_other_rules():
    n = 20
    out = flags({"train/game/invalid_per_game": curve([0.1] * 10 + [1.5] * 10),
                 "train/game/format_rate": curve([1.0] * 10 + [0.5] * 10),
                 "train/grad_norm": curve([1.0] * (n - 1) + [50.0])})
    assert sorted(f.rule for f in out) == ["divergence", "format_loss", "invalid_surge"]
    assert next(f for f in out if f.rule == "divergence").step == n
    assert set(rules_text()) == {"collapse", "invalid_surge", "format_loss", "divergence", "reward_without_skill",
                                 "(all rules)"}
    assert "phase" in rules_text()["(all rules)"]


def two_phases(second: list[float]) -> dict:
    """Phase 0 rises to 0.8 over 20 steps; phase 1 (stronger opponents) follows with `second`."""
    first = [0.3 + 0.5 * i / 19 for i in range(20)]
    reward = curve(first + second)
    return {"train/reward": reward, "train/phase": [(s, 0.0 if s <= 20 else 1.0) for s, _ in reward]}


def test_a_reward_drop_at_a_phase_boundary_is_not_a_collapse():
    harder = [0.4 + 0.01 * (i % 3) for i in range(20)]  # lower, and steady, from the first step of phase 1
    assert flags(two_phases(harder)) == []
    assert [f.rule for f in flags({"train/reward": two_phases(harder)["train/reward"]})] == ["collapse"], \
        "without the phases the same curve is a collapse: the rule is what knows better"


def test_a_drop_inside_a_phase_is_a_collapse():
    inside = [0.6, 0.7, 0.75, 0.78, 0.8] + [0.2] * 15  # phase 1 rises, then falls within itself
    (flag,) = flags(two_phases(inside))
    assert flag.rule == "collapse" and "(phase 1)" in flag.detail and flag.step > 20


@given(st.lists(st.floats(0.5, 1.0), min_size=4, max_size=60))
def test_a_reward_that_never_falls_30_percent_below_its_best_never_collapses(values):
    best = max(values)
    out = flags({"train/reward": curve(values)})
    if all(v >= best * 0.7 for v in values):
        assert out == []


def test_reward_won_with_moves_that_give_the_game_away_is_flagged_within_a_phase():
    from ttt_lab.report.stability import flags

    steps = range(20)
    rising = [(s, 0.5 + 0.02 * s) for s in steps]
    skill_falls = [(s, 0.95 - 0.01 * s) for s in steps]
    skill_holds = [(s, 0.95 + 0.001 * (s % 2)) for s in steps]
    found = flags({"train/reward": rising, "train/game/optimal_move_rate": skill_falls})
    assert [f.rule for f in found] == ["reward_without_skill"] and "optimal-move rate fell" in found[0].detail
    assert flags({"train/reward": rising, "train/game/optimal_move_rate": skill_holds}) == []
