"""`ttt-lab sweep --until-settled` and the inputs it refuses."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.named_plans import NAMES
from ttt_lab.studies.settle import seeds_for, with_seeds
from ttt_lab.studies.spec import from_args


def _nothing_written(home: Path) -> bool:
    return not (home / "optuna.db").exists() and not (home / "reports").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["batch_size=8,16", "experiment=smoke", "--until-settled"], "a grid without seeds"),
    (["batch_size=8,16", "seed=0", "experiment=smoke", "--until-settled"], "a grid without seeds"),
    (["batch_size=8,16", "seed=0,1", "experiment=smoke", "--max-seeds", "4"], "--max-seeds bounds --until-settled"),
    (["batch_size=8,16", "seed=0,1,2", "experiment=smoke", "--until-settled", "--max-seeds", "2"],
     "fewer than the 3"),
    (["batch_size=8,16", "seed=0,1", "experiment=smoke", "--until-settled", "--launcher", "slurm",
      "launcher.cluster=local"], "must wait for the launcher's jobs: add --wait"),
])
def test_until_settled_refuses_a_study_it_cannot_settle_before_any_work(home: Path, args: list[str],
                                                                        says: str) -> None:
    out = cli("sweep", *args, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in " ".join(out.stderr.split()) and "Traceback" not in out.stderr
    assert _nothing_written(home)


@pytest.mark.parametrize("margin", ["0", "-0.1", "1", "1.5", "'x'"])
def test_a_margin_outside_the_objectives_range_is_refused(home: Path, tmp_path: Path, margin: str) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(f"name: m\nmargin: {margin}\nparams:\n  batch_size: 8,16\n  seed: 0,1\n"
                 "overrides: [experiment=smoke]\n")
    out = cli("sweep", str(f), "--dry-run", check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join(out.stderr.split())
    assert "margin" in text and "Traceback" not in out.stderr
    assert _nothing_written(home)


def test_exact_mode_for_a_player_that_cannot_give_its_distribution_is_refused(home: Path) -> None:
    out = cli("eval", "player=openai", "eval.mode=exact", check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join(out.stderr.split())
    assert "eval.mode=exact" in text and "eval.mode=sampled" in text and "Traceback" not in out.stderr
    assert not list(home.glob("evals/*"))


def test_seeds_are_added_after_the_studys_own_and_keep_its_identity() -> None:
    spec = from_args(["batch_size=8,16", "seed=3,5", "experiment=smoke"])
    assert seeds_for([3, 5], 5) == [3, 5, 6, 7, 8]
    assert with_seeds(spec, seeds_for([3, 5], 4)).params["seed"] == "3,5,6,7"
    assert with_seeds(spec, [3, 5, 6]).key() == spec.key()
    assert from_args(["batch_size=8,32", "seed=3,5", "experiment=smoke"]).key() != spec.key()


def test_until_settled_decides_and_records_its_looks(home: Path) -> None:
    """Two conditions that cannot differ (the transcript setting changes no number): two seeds of
    no spread are not certainty, so the budget is spent unresolved and the looks are recorded for
    the report; running it again takes no new trial."""
    args = ["eval.transcript=true,false", "seed=0,1", "experiment=smoke", "--name", "same"]
    out = cli("sweep", *args, "--until-settled", "--max-seeds", "2")
    text = " ".join(out.stdout.split())
    assert "unresolved" in text and "budget (2) is spent" in text and "for 'equivalent'" in text, text
    assert "all agree is decided after 8 seeds" in text and "decide by 10 seeds" in text, text
    _answered_in_mlflow(home, "same")
    again = cli("sweep", *args, "--until-settled", "--max-seeds", "2")
    assert "every trial is done already" in again.stdout
    cli("report", "same")
    verdict = json.loads((home / "reports" / "same" / "verdict.json").read_text())
    assert verdict["looks"] == [2] and verdict["max_seeds"] == 2 and verdict["procedure"] == "anytime"
    (c,) = verdict["comparisons"]
    assert c["decision"] == "unresolved" and c["difference"] == 0.0 and c["paired"]
    assert (c["better"], c["worse"], c["ties"]) == (0, 0, 2) and c["mean_decision"] == "unresolved"
    assert verdict["alpha_split"] == {"improvement": 0.04, "mean": 0.01, "collapse": 0.0}


def _answered_in_mlflow(home: Path, study: str) -> None:
    """The look wrote the answer on the parent run (the note, a tag per comparison) and the
    conditions' aggregates on a run per condition (tests/report/test_tracked.py: the details)."""
    from ttt_lab.tracking.answer import answer_of, condition_runs
    from ttt_lab.tracking.store import find_parent, open_store

    store = open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))
    parent = find_parent(store, study)
    note, tags = answer_of(store, parent.info.run_id)
    assert "is unresolved after 2 seeds" in note and "| condition |" in note, note
    assert [v.split(" | ")[0] for v in tags.values()] == ["unresolved"], tags
    assert len(condition_runs(store, parent.info.experiment_id, parent.info.run_id)) == 2


def test_a_design_changed_after_its_first_look_is_refused_and_nothing_is_written(home: Path, tmp_path: Path) -> None:
    """The margin (or bounds, delta, alpha split, threshold) is stored at the first look: choosing it
    again after seeing the seeds exits 2 with one paragraph, before any trial or tag is written."""
    import optuna

    f = tmp_path / "any.yaml"
    f.write_text("name: any\noverrides: [experiment=smoke]\nmargin: 0.05\n"
                 "params:\n  eval.transcript: true,false\n  seed: 0,1\n")
    cli("sweep", str(f), "--until-settled", "--max-seeds", "2")
    storage = f"sqlite:///{home / 'optuna.db'}"
    before = optuna.load_study(study_name="any", storage=storage)
    trials, attrs = len(before.trials), dict(before.user_attrs)
    f.write_text(f.read_text().replace("margin: 0.05", "margin: 0.2"))
    changed = cli("sweep", str(f), "--until-settled", "--max-seeds", "4", check=False)
    text = " ".join((changed.stdout + changed.stderr).split())
    assert changed.returncode == 2 and "margin 0.05 -> 0.2" in text and "Traceback" not in text, text
    after = optuna.load_study(study_name="any", storage=storage)
    assert len(after.trials) == trials and dict(after.user_attrs) == attrs


def test_a_fixed_design_refuses_a_budget_raise_after_its_first_look(home: Path, tmp_path: Path) -> None:
    f = tmp_path / "fx.yaml"
    f.write_text("name: fx\ndecisions: fixed\nlooks: [2]\noverrides: [experiment=smoke]\n"
                 "params:\n  eval.transcript: true,false\n  seed: 0,1\n")
    first = cli("sweep", str(f), "--until-settled")
    assert "declared looks are all taken" in " ".join(first.stdout.split()), first.stdout
    f.write_text(f.read_text().replace("looks: [2]", "looks: [2, 4]"))
    raised = cli("sweep", str(f), "--until-settled", check=False)
    text = " ".join((raised.stdout + raised.stderr).split())
    assert raised.returncode == 2 and "re-divides what was already spent" in text and "Traceback" not in text
    assert "looks [2] -> [2, 4]" in text
    assert "decisions: anytime" in text


@pytest.mark.xdist_group("named-plans")
@pytest.mark.parametrize("study", NAMES)
def test_every_shipped_study_plans_and_shows_its_margin_and_seed_design(named_plans, study: str) -> None:
    """`ttt-lab sweep STUDY --dry-run` as the command runs it (`ttt_lab.api.sweep`; its lines as a
    sweep worker's log has them), in this process on the study's plan that test_spec_grid.py's
    tests share (`named_plans`: its configs are composed once). The console's own drawing of a
    named study's dry run: test_named_studies.py."""
    from ttt_lab import api, log

    out = io.StringIO()
    with named_plans.reused(study) as home, log.to(out):
        result = api.sweep(study, dry_run=True)
    text = " ".join(out.getvalue().split())
    assert result.ok and result.parent_run_id is None
    decided = "margin ±" in text and ("seeds " in text or "no seed parameter" in text)
    assert decided or "a search on" in text, text[-600:]
    assert not (home / "reports").exists() and not (home / "train").exists()  # planned, nothing run


def test_sweep_workers_honour_the_tracking_outage_wait(tmp_path: Path) -> None:
    from ttt_lab.studies.plan import make_plan
    from ttt_lab.studies.worker import plan_job

    spec = from_args(["batch_size=8,16", "experiment=smoke", f"home={tmp_path}", "tracking.outage_wait_s=7"])
    job = plan_job(make_plan(spec), "sqlite:///x.db", "parent", 0, 1, str(tmp_path))
    assert job.outage_wait_s == 7 and job.open_store().outage_wait_s == 7


def test_a_look_with_more_seeds_claims_and_runs_the_new_points_in_the_same_study() -> None:
    """The second look's grid has more seed values than the first's: its trials are claimed from
    the same Optuna study (a categorical parameter cannot gain values there, so grid points live
    in user attributes)."""
    import optuna

    from ttt_lab.studies.enqueue import enqueue_grid
    from ttt_lab.studies.plan import make_plan
    from ttt_lab.studies.worker import claim, trial_overrides

    spec = from_args(["batch_size=8,16", "seed=0,1", "experiment=smoke"])
    study = optuna.create_study(study_name=spec.name, direction="maximize")
    seen = []
    for n in (2, 4):
        look = with_seeds(spec, seeds_for([0, 1], n))
        assert enqueue_grid(study, make_plan(look)) == 2 * (n - len(seen) // 2)
        while (trial := claim(look, study, None)) is not None:
            seen.append(" ".join(trial_overrides(trial)))
            study.tell(trial, 0.5)
    assert sorted(seen) == sorted(f"batch_size={b} seed={k}" for b in (8, 16) for k in range(4))


def test_a_command_line_grid_without_seeds_runs_seeds_against_its_first_value_and_answers(home: Path) -> None:
    """The card's shape: no seeds named, so the grid runs study.seeds of them (the default, None,
    runs as many as an all-agreeing comparison needs; the smoke preset sets 1) against its first
    value, and ends with one look: the decisions in the endpoint's words."""
    args = ["eval.transcript=true,false", "experiment=smoke", "study.seeds=2", "--name", "card"]
    dry = " ".join(cli("sweep", *args, "--dry-run").stdout.split())
    assert f"4 trials on {min(os.cpu_count() or 1, 4)} worker(s)" in dry, dry  # one a core, no more than trials
    out = cli("sweep", *args, "--workers", "1")  # in this process: no interpreter to start
    text = " ".join(out.stdout.split())
    assert "each condition against eval.transcript=True (the first value typed" in text, text
    assert "seeds 0,1 in every condition (none named" in text and "P(improvement)" in text, text
    assert "the seed budget (2) is spent" in text and "--until-settled --max-seeds" in text, text
    assert "against eval.transcript=True is unresolved after 2 seeds: better on" in text, text  # the endpoint's words
    one = cli("sweep", "eval.transcript=true,false", "experiment=smoke", "--name", "one", "--dry-run")
    assert "no seed parameter" in " ".join(one.stdout.split())
