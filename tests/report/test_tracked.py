"""The study's answer on its MLflow parent run (a real SQLite store): the note in the report's own
words, a tag per comparison, a run per condition with its aggregates, the experiment marked as
model training; written by `ttt-lab report` and by a look of `--until-settled`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ttt_lab.tracking import keys

ARGS = ["batch_size=8,16", "seed=0,1,2,3,4,5,6,7", "experiment=smoke"]
DRAWS = {8: [0.50, 0.55, 0.40, 0.62, 0.48, 0.51, 0.45, 0.58], 16: [0.70, 0.80, 0.66, 0.90, 0.72, 0.75, 0.61, 0.88]}


@pytest.fixture
def store(home: Path):
    from ttt_lab.tracking.store import open_store

    return open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))


def make_study(store) -> tuple[object, str]:
    """A finished two-condition study as a sweep leaves it: (its spec, its parent run's id)."""
    from ttt_lab.studies.parent_run import study_tags
    from ttt_lab.studies.spec import from_args
    from ttt_lab.tracking.store import TrackedRun

    spec = from_args(ARGS, name="answered")
    parent = TrackedRun(store, spec.name, name=spec.name, tags={keys.KIND: "sweep", **study_tags(spec)})
    for bs, draws in DRAWS.items():
        for seed, draw in enumerate(draws):
            run = TrackedRun(store, spec.name, name=f"trial-{bs}-{seed}", parent_run_id=parent.run_id,
                             tags={keys.KIND: "trial", keys.TRIAL: str(len(draws) * (bs == 16) + seed),
                                   keys.OPTUNA_STATE: "COMPLETE",
                                   keys.TRIAL_OVERRIDES: f"batch_size={bs} seed={seed}"})
            run.log_params({"seed": str(seed)})
            run.log_metrics({"eval/optimal/draw_rate": draw})
            run.end("FINISHED")
    parent.end("FINISHED")
    return spec, parent.run_id


def condition_runs(store, parent: str) -> dict[str, object]:
    runs = store.client.search_runs([store.client.get_run(parent).info.experiment_id],
                                    f"tags.`ttt.kind` = 'condition' and tags.`mlflow.parentRunId` = '{parent}'")
    return {r.data.tags[keys.CONDITION]: r for r in runs}


def test_a_report_writes_the_answer_on_the_parent_run_and_a_run_per_condition(store, home: Path) -> None:
    from ttt_lab import api
    from ttt_lab.report.collect import collect

    _, parent = make_study(store)
    result = api.report("answered")
    run = store.client.get_run(parent)
    note = run.data.tags[keys.NOTE]
    assert result.answer and all(s in note for s in result.answer), note  # the report's own sentences
    assert "| condition | better / worse / tied | P(improvement) [interval] | decision |" in note
    verdict = json.loads((home / "reports" / "answered" / "verdict.json").read_text())
    (c,) = verdict["comparisons"]
    tag = run.data.tags["ttt.answer.batch_size_8"]  # no baseline declared: against the best
    assert tag.startswith(f"{c['decision']} | probability of improvement {c['improvement']:.2f} "
                          f"[{c['improvement_lo']:.2f}, {c['improvement_hi']:.2f}] against batch_size=16 on 8 seeds")
    experiment = store.client.get_experiment(run.info.experiment_id)
    assert experiment.tags[keys.EXPERIMENT_KIND] == keys.MODEL_TRAINING
    api.report("answered")  # again: the same condition runs, updated
    runs = condition_runs(store, parent)
    assert sorted(runs) == ["batch_size=16", "batch_size=8"]
    for cond, r in runs.items():
        want = verdict["conditions"][cond]
        got = {k.removeprefix("aggregate/"): v for k, v in r.data.metrics.items()}
        assert got["seeds"] == 8 and got["mean"] == pytest.approx(want["mean"])
        assert got["iqm"] == pytest.approx(want["iqm"]) and [got["iqm_lo"], got["iqm_hi"]] == pytest.approx(
            want["iqm_interval"])
        assert r.info.run_name == cond and r.info.status == "FINISHED"
    assert runs["batch_size=8"].data.metrics["aggregate/probability_of_improvement"] == pytest.approx(0.0)
    assert "aggregate/probability_of_improvement" not in runs["batch_size=16"].data.metrics
    assert runs["batch_size=16"].data.tags[keys.DECISION] == "reference"
    assert runs["batch_size=8"].data.tags[keys.DECISION] == c["decision"]
    assert len(collect(store, "answered", with_curves=False).trials) == 16  # condition runs are no trials


def test_a_settle_look_writes_the_answer_on_the_parent_run(store) -> None:
    """`_record` as a look of `--until-settled` calls it, with the publisher the API hands down."""
    import optuna

    from ttt_lab.report.collect import collect
    from ttt_lab.report.decisions import answer
    from ttt_lab.report.tracked import note, publish
    from ttt_lab.stats.decide import decide
    from ttt_lab.studies.settle import LOOKS_ATTR, _record, design_of

    spec, parent = make_study(store)
    study = optuna.create_study(study_name=spec.name, direction="maximize")
    study.set_user_attr("mlflow_parent_run_id", parent)
    study.set_user_attr(LOOKS_ATTR, [8])
    by_cond = {f"batch_size={bs}": dict(enumerate(d)) for bs, d in DRAWS.items()}
    result = decide(by_cond, reference="batch_size=16", declared=False, metric="eval/optimal/draw_rate",
                    design=design_of(spec, 8, 8), looks=[8])
    _record(study, lambda: store, spec, result, 8, publish)
    run = store.client.get_run(parent)
    assert run.data.tags[keys.LOOKS] == "8" and run.info.status == "FINISHED"
    assert run.data.tags[keys.NOTE] == note(answer(collect(store, parent, with_curves=False)))
    assert run.data.tags["ttt.answer.batch_size_8"].startswith(result.comparisons[0].decision)
    runs = condition_runs(store, parent)
    assert {c: r.data.metrics["aggregate/seeds"] for c, r in runs.items()} == {"batch_size=8": 8,
                                                                               "batch_size=16": 8}


def test_a_condition_becomes_a_key_mlflow_accepts() -> None:
    from ttt_lab.tracking.answer import answer_key, key_part

    assert key_part("batch_size=16") == "batch_size_16"
    assert key_part("(baseline)") == "_baseline_"
    assert key_part("model.path=../x lr=1e-3") == "model.path_.._x lr_1e-3"
    assert answer_key("a=" + "x" * 400).startswith("ttt.answer.a_") and len(answer_key("x" * 400)) == 250
