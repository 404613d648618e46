"""The plan's time estimate: a warm-up shared by trials is paid once, one per seed is paid per seed."""

from __future__ import annotations

from ttt_lab.config.load import load
from ttt_lab.studies import estimate


def _trial(*overrides: str) -> tuple[float, tuple[str, float]]:
    cfg = load(list(overrides)).cfg
    return estimate.trial_seconds(cfg), estimate.warm_up(cfg)


def test_a_shared_warm_up_is_counted_once_and_seeds_warm_up_apart() -> None:
    shared = [_trial(f"batch_size={b}", "seed=0", "train.sft.seed=0") for b in (64, 512)]
    own = [_trial("batch_size=64", f"seed={s}") for s in (0, 1)]
    (_, (key, warm)), _ = shared
    assert warm > 0 and key == shared[1][1][0]
    assert estimate.study_seconds(shared) == shared[0][0] + shared[1][0] + warm
    assert own[0][1][0] != own[1][1][0]
    assert estimate.study_seconds(own) == own[0][0] + own[1][0] + own[0][1][1] + own[1][1][1]
    assert shared[1][0] > shared[0][0]  # 8x the games an update


def test_no_warm_up_costs_nothing() -> None:
    cfg = load(["train.sft.enabled=false"]).cfg
    assert estimate.warm_up(cfg) == ("", 0.0)
    assert estimate.study_seconds([(estimate.trial_seconds(cfg), estimate.warm_up(cfg))]) == estimate.trial_seconds(cfg)
