from pathlib import Path

import pytest

from ttt_lab.report.collect import FINAL_METRICS, ReportError, collect


@pytest.fixture
def store(home: Path):
    from ttt_lab.tracking.store import open_store

    return open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))


def make_study(store, metrics_per_trial: list[dict[str, float]], states: list[str]) -> None:
    from ttt_lab.tracking.store import TrackedRun

    parent = TrackedRun(store, "s", name="s", tags={"ttt.kind": "sweep"})
    for i, (metrics, state) in enumerate(zip(metrics_per_trial, states, strict=True)):
        run = TrackedRun(store, "s", name=f"trial-{i}", parent_run_id=parent.run_id,
                         tags={"ttt.trial": str(i), "optuna.state": state, "ttt.trial_overrides": f"seed={i}"})
        run.log_metrics(metrics)
        run.end("FINISHED" if state == "COMPLETE" else "FAILED")
    parent.end("FINISHED")


def test_missing_metrics_make_a_partial_report(store) -> None:
    full = {m: 0.5 for m in FINAL_METRICS}
    make_study(store, [full, {"eval/random/win_rate": 0.4}, {}], ["COMPLETE", "COMPLETE", "FAIL"])
    study = collect(store, "s", with_curves=False)
    assert len(study.conditions()["(baseline)"]) == 2
    assert any("trial 1 lacks eval/random/draw_rate" in p for p in study.problems)
    assert any("trial 2" in p and "fail" in p for p in study.problems)


def test_no_study_and_no_finished_trial_are_clear_errors(store) -> None:
    with pytest.raises(ReportError, match="No study 'nope'"):
        collect(store, "nope")
    make_study(store, [{}], ["FAIL"])
    with pytest.raises(ReportError, match="no finished trial"):
        collect(store, "s")


def test_conditions_are_listed_with_numbers_in_numeric_order() -> None:
    from ttt_lab.report.collect import natural_key

    labels = ["batch_size=512", "batch_size=64", "batch_size=128 lr=1e-4", "batch_size=128 lr=0.5"]
    assert sorted(labels, key=natural_key) == ["batch_size=64", "batch_size=128 lr=0.5", "batch_size=128 lr=1e-4",
                                               "batch_size=512"]
