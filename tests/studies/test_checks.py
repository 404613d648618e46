"""Each setting a study cannot mean, refused before anything runs: one paragraph naming the key
(exit 2 from the CLI), nothing written. `ttt_lab.studies.checks` and the metric registry
`ttt_lab.evaluation.metric_names`."""

from __future__ import annotations

import ast
import inspect
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab import api
from ttt_lab.errors import TttLabError
from ttt_lab.evaluation.metric_names import is_logged, nearest, trial_metrics

BASE = "name: u\noverrides: [experiment=smoke{more}]\nparams:\n  batch_size: 8,16\n  seed: 0,1\n"


@pytest.fixture
def spot(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a file, a folder, a file that is not SQLite and a SQLite file; the working folder."""
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_file").write_text("a file\n")
    with sqlite3.connect(tmp_path / "a_db") as db:
        db.execute("CREATE TABLE t (x)")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(spot: Path, body: str, **options) -> str:
    study = spot / "u.yaml"
    study.write_text(body)
    with pytest.raises(TttLabError) as e:
        api.sweep(study, dry_run=True, **options)
    text = str(e.value)
    assert "\n" not in text.strip() and "Traceback" not in text
    return text


CASES = {
    "workers": (BASE + "workers: 0\n", {}, "workers"),
    "--workers": (BASE, {"workers": -1}, "--workers"),
    "--max-failures": (BASE, {"max_failures": 0}, "--max-failures"),
    "--trial-timeout": (BASE, {"trial_timeout": 0.0}, "--trial-timeout"),
    "--max-seeds": (BASE, {"until_settled": True, "max_seeds": 0}, "--max-seeds"),
    "n_trials on a grid": (BASE + "n_trials: 3\n", {}, "n_trials"),
    "--trials on a grid": (BASE, {"trials": 0}, "n_trials"),
    "max_seeds below the seeds": (BASE.replace("0,1", "0,1,2") + "max_seeds: 2\n", {}, "max_seeds 2"),
    "max_seeds without seeds": (BASE.replace("  seed: 0,1\n", "") + "max_seeds: 4\n", {}, "max_seeds"),
    "looks past max_seeds": (BASE + "decisions: fixed\nlooks: [2, 4]\nmax_seeds: 3\n", {}, "looks"),
    "baseline not a condition": (BASE + "baseline: batch_size=32\n", {}, "baseline"),
    "baseline of a one-condition grid": (BASE.replace("8,16", "8") + "baseline: batch_size=8\n", {}, "baseline"),
    "margin wider than the range": (
        BASE + "objective: {metric: eval/exploitability, direction: minimize}\nmargin: 1.5\n", {}, "margin"),
    "margin wider than declared bounds": (BASE + "bounds: [0, 0.5]\nmargin: 0.6\n", {}, "margin"),
    "collapse_below above the range": (BASE + "collapse_below: 1.5\n", {}, "collapse_below"),
    "collapse_below at the bottom": (BASE + "collapse_below: 0\n", {}, "collapse_below"),
    "collapse_below on a minimized objective": (
        BASE + "objective: {metric: eval/exploitability, direction: minimize}\ncollapse_below: 0.5\n", {},
        "collapse_below"),
    "objective no trial logs": (BASE + "objective: {metric: eval/optimal/drawrate}\n", {}, "eval/optimal/draw_rate"),
    "objective of an opponent not played": (BASE + "objective: {metric: eval/minimax_p25/win_rate}\n", {},
                                            "objective metric"),
    "pruner without evaluations": (BASE.format(more=", train.eval_every=0") + "pruner: {name: median}\n", {},
                                   "pruner"),
    "pruner on an audit": (BASE.format(more=", audit.policy.in_studies=true, train.eval_every=5")
                           + "objective: {metric: audit/policy/memorisation.gap, direction: minimize}\n"
                           + "pruner: {name: median}\n", {}, "pruner"),
    "threshold pruner reversed": (BASE + "pruner: {name: threshold, lower: 0.9, upper: 0.1}\n", {}, "lower"),
    "sampler seed": (BASE + "sampler: {name: tpe, seed: -1}\n", {}, "sampler.seed"),
    "halving reduction factor": (BASE + "pruner: {name: halving, reduction_factor: 1}\n", {},
                                 "pruner.reduction_factor"),
    "grid sampler on an interval": ("name: u\nkind: search\nn_trials: 2\noverrides: [experiment=smoke]\nparams:\n"
                                    "  lr: interval(1e-5, 1e-3)\nsampler: {name: grid}\n", {}, "grid sampler"),
    "searched key not in the config": ("name: u\nkind: search\nn_trials: 2\noverrides: [experiment=smoke]\nparams:\n"
                                       "  no.such.key: interval(0, 1)\n", {}, "no.such.key"),
    "searched range out of the config's": ("name: u\nkind: search\nn_trials: 2\noverrides: [experiment=smoke]\n"
                                           "params:\n  train.phases.0.learning_rate: interval(-1, 1)\n", {},
                                           "learning_rate"),
    "log interval from 0": ("name: u\nkind: search\nn_trials: 2\noverrides: [experiment=smoke]\nparams:\n"
                            "  lr: tag(log, interval(0, 1e-3))\n", {}, "lr"),
    "two spellings of one value": (BASE.replace("8,16", "8,'8'"), {}, "same config"),
    "home is a file": (BASE.format(more=", home={spot}/a_file"), {}, "home"),
    "home below a file": (BASE.format(more=", home={spot}/a_file/runs"), {}, "home"),
    "artifacts is a file": (BASE.format(more=", tracking.artifacts={spot}/a_file"), {}, "tracking.artifacts"),
    "audit.out is a file": (BASE.format(more=", audit.out={spot}/a_file"), {}, "audit.out"),
    "tracking.uri not a database": (BASE.format(more=", tracking.uri=sqlite:///{spot}/a_file"), {}, "tracking.uri"),
    "tracking.uri a folder": (BASE.format(more=", tracking.uri=sqlite:///{spot}/a_folder"), {}, "tracking.uri"),
    "storage a folder": (BASE, {"storage": "sqlite:///{spot}/a_folder"}, "--storage"),
    "storage not a database": (BASE, {"storage": "sqlite:///{spot}/a_file"}, "--storage"),
    "journal a database": (BASE, {"storage": "journal:///{spot}/a_db"}, "--storage"),
    "storage another program's database": (BASE, {"storage": "sqlite:///{spot}/a_db"}, "not an Optuna storage"),
    "storage the MLflow store": (BASE, {"storage": "sqlite:///{home}/mlflow.db"}, "not an Optuna storage"),
    "tracking.uri another program's database": (BASE.format(more=", tracking.uri=sqlite:///{spot}/a_db"), {},
                                                "not an MLflow store"),
    "journal a folder": (BASE, {"storage": "journal:///{spot}/a_folder"}, "--storage"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_setting_that_cannot_be_right_is_one_paragraph_naming_it(spot: Path, home: Path, case: str) -> None:
    body, options, named = CASES[case]
    body = body.replace("{more}", "").replace("{spot}", str(spot))
    options = {k: v.replace("{spot}", str(spot)).replace("{home}", str(home)) if isinstance(v, str) else v
               for k, v in options.items()}
    before = sorted(p for p in home.rglob("*") if not p.name.endswith(".lock"))
    text = _refused(spot, body, **options)
    assert named in text, text
    assert sorted(p for p in home.rglob("*") if not p.name.endswith(".lock")) == before, "nothing is written"


@pytest.mark.parametrize(("variable", "named"), [("TTT_LAB_CONFIG_DIR", "config folder"),
                                                 ("TTT_LAB_CONF", "TTT_LAB_CONF")])
def test_a_config_folder_that_is_a_file_is_refused(spot: Path, monkeypatch: pytest.MonkeyPatch, variable: str,
                                                   named: str) -> None:
    monkeypatch.setenv(variable, str(spot / "a_file"))
    text = _refused(spot, BASE.format(more=""))
    assert named in text and "a_file" in text, text


def test_a_baseline_spelled_otherwise_is_named_as_the_trials_spell_it(spot: Path) -> None:
    text = _refused(spot, BASE.format(more="").replace("batch_size: 8,16", "train.sft.enabled: true,false")
                    + "baseline: train.sft.enabled=true\n")
    assert "Did you mean 'train.sft.enabled=True'?" in text


def test_a_custom_metric_is_declared_and_then_not_checked(spot: Path) -> None:
    study = spot / "u.yaml"
    study.write_text(BASE.format(more="") + "objective: {metric: mine/score, direction: maximize, custom: true}\n"
                     "bounds: [0, 10]\n")
    assert api.sweep(study, dry_run=True).name == "u"
    study.write_text(BASE.format(more="") + "objective: {metric: mine/score, direction: maximize}\n")
    assert "custom: true" in _refused(spot, study.read_text())


def test_declaring_a_metric_custom_keeps_the_study_s_identity(tmp_path: Path) -> None:
    from ttt_lab.studies.spec import from_file

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(BASE.format(more="") + "objective: {metric: eval/optimal/draw_rate}\n")
    b.write_text(BASE.format(more="") + "objective: {metric: eval/optimal/draw_rate, custom: true}\n")
    assert from_file(a, []).key() == from_file(b, []).key()


@pytest.mark.parametrize(("args", "named"), [
    (["--workers", "0"], "--workers"),
    (["--storage", "sqlite:///{spot}/a_file"], "--storage"),
])
def test_the_cli_exits_2_with_one_paragraph(spot: Path, args: list[str], named: str) -> None:
    study = spot / "u.yaml"
    study.write_text(BASE.format(more=""))
    out = cli("sweep", str(study), "--dry-run", *(a.replace("{spot}", str(spot)) for a in args), check=False,
              cwd=str(spot))
    assert out.returncode == 2, out.stdout + out.stderr
    assert named in out.stderr and "Traceback" not in out.stderr + out.stdout


def test_the_registry_holds_what_evaluation_and_the_audit_log() -> None:
    names = trial_metrics()
    for m in ("eval/optimal/draw_rate", "eval/random/win_rate", "eval/exploitability", "eval/exploiter/draw_rate",
              "audit/policy/memorisation.gap", "audit/policy/fork_allowed_rate", "eval/optimal/reward"):
        assert is_logged(m), m
    assert not is_logged("eval/minimax_p25/win_rate")  # the training suite's opponents only
    assert nearest("eval/optimal/drawrate")[0] == "eval/optimal/draw_rate"
    assert all(n.startswith(("eval/", "audit/policy/")) for n in names)


def test_the_audit_s_check_names_are_the_registry_s() -> None:
    """Every check the policy audit builds (`Check("name", …)`, `upper("name", …)`) is in CHECKS."""
    from ttt_lab.audit import policy

    built = {node.args[0].value for node in ast.walk(ast.parse(inspect.getsource(policy)))
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Check", "upper", "lower")
             and node.args and isinstance(node.args[0], ast.Constant)}
    assert built == set(policy.CHECKS)
