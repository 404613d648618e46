"""The Python API (`from ttt_lab import api`): each function returns data and prints nothing; a user's own
config folder works beside the shipped one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ttt_lab import api
from ttt_lab.config.load import ConfigError, conf_dir
from ttt_lab.errors import TttLabError

QUIET_EVAL = ["player=random", "eval.suite=quick", "games=20"]


def test_importing_the_api_loads_no_heavy_library() -> None:
    """`import ttt_lab` is an empty package and the API imports its libraries when a function runs."""
    code = ("import sys, ttt_lab; print('ttt_lab.api' in sys.modules); import ttt_lab.api; "
            "print([m for m in ('torch', 'mlflow', 'optuna', 'hydra', 'rich') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["False", "[]"]


def test_ttt_lab_train_is_the_training_package_only() -> None:
    import ttt_lab
    import ttt_lab.train

    assert not callable(ttt_lab.train) and ttt_lab.train.__name__ == "ttt_lab.train"
    assert not hasattr(ttt_lab, "evaluate")  # the API's names live in ttt_lab.api


def test_load_config_and_config_diff_return_data(capsys: pytest.CaptureFixture[str]) -> None:
    loaded = api.load_config(["experiment=smoke", "batch_size=8"])
    assert loaded.cfg.train.phases[0].batch_size == 8
    diff = api.config_diff(loaded)
    assert diff.changes["train.phases.0.batch_size"][1] == 8 and diff.config_hash == loaded.config_hash
    assert api.config_diff([]).changes == {}
    with pytest.raises(TttLabError, match="list of overrides"):
        api.config_diff("experiment=smoke")  # type: ignore[arg-type]
    assert capsys.readouterr() == ("", "")


def test_evaluate_returns_rates_and_prints_nothing(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    result = api.evaluate(QUIET_EVAL)
    assert {s.opponent for s in result.summaries} >= {"optimal"} and result.suite == "quick"
    assert result.games == sum(s.games for s in result.summaries) and result.failures == {}
    rates = result.metrics
    assert 0.0 <= rates["eval/optimal/draw_rate"] <= 1.0
    assert rates["eval/optimal/win_rate"] == 0.0  # nobody beats the minimax player
    assert result.run_id is not None and result.config_hash == api.load_config(QUIET_EVAL).config_hash
    assert capfd.readouterr().out == ""


def test_audit_returns_its_checks_and_files(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    result = api.audit("opponent", ["tie_break=first", "tracking.enabled=false"])
    assert result.status == "FAIL" and "tie_break.dominated_share" in result.failed
    assert [p.name for p in result.paths] == ["audit.json", "audit.md", "audit.html"]
    assert all(p.is_file() for p in result.paths) and result.run_id is None
    assert capfd.readouterr().out == ""
    with pytest.raises(TttLabError, match="Unknown audit 'nope'"):
        api.audit("nope")  # type: ignore[arg-type]


@pytest.mark.xdist_group("named-plans")
def test_sweep_dry_run_of_a_named_study(home: Path, named_plans) -> None:
    with named_plans.reused("quickstart"):  # the study's configs, composed once for every test of the shipped studies
        result = api.sweep("quickstart", dry_run=True)
    assert result.name == "quickstart" and result.parent_run_id is None and result.ok
    with pytest.raises(TttLabError, match=r"launcher settings .* without --launcher"):
        api.sweep(None, ["batch_size=8,16", "launcher.partition=gpu"], dry_run=True)
    planned = api.sweep(None, ["batch_size=8,16", "launcher.cluster=local"], launcher="slurm", dry_run=True)
    assert planned.ok and planned.parent_run_id is None  # the API submits to a launcher as the CLI does
    options = api.SweepOptions(launcher="local", dry_run=True)  # what the CLI builds from its flags
    assert api.sweep(None, ["batch_size=8,16"], options).ok
    with pytest.raises(TypeError):
        api.SweepOptions(True)  # type: ignore[misc]  # keyword-only


def test_named_studies_lists_the_shipped_ones() -> None:
    places = {p.name: p for p in api.named_studies()}
    assert places["quickstart"].first and places["quickstart"].question and not places["quickstart"].clash


def _my_presets(tmp_path: Path) -> Path:
    """A user folder: the shipped smoke recipe copied and renamed, and an opponent of one's own."""
    mine = tmp_path / "presets"
    (mine / "experiment").mkdir(parents=True)
    (mine / "opponent").mkdir()
    (mine / "experiment" / "my_smoke.yaml").write_text((conf_dir() / "experiment" / "smoke.yaml").read_text())
    random = (conf_dir() / "opponent" / "random.yaml").read_text()
    assert "p_random: 1.0" in random
    (mine / "opponent" / "my_random.yaml").write_text(random.replace("p_random: 1.0", "p_random: 0.5"))
    return mine


def test_a_preset_from_a_user_folder_composes_like_the_shipped_one(tmp_path: Path) -> None:
    mine = _my_presets(tmp_path)
    shipped = api.load_config(["experiment=smoke"])
    ours = api.load_config(["experiment=my_smoke", "opponent=my_random"], config_dirs=[mine])
    assert ours.cfg.opponent.p_random == 0.5
    same = api.load_config(["experiment=my_smoke"], config_dirs=[mine])
    assert same.tree == shipped.tree and same.config_hash == shipped.config_hash
    with pytest.raises(ConfigError, match=r"Choose one of: .*published.*smoke"):
        api.load_config(["experiment=my_smoke"])  # the folder was added for that call only


def test_a_preset_from_a_user_folder_trains(home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    mine = _my_presets(tmp_path)
    with api.using_config_dirs([mine]):
        result = api.train(["experiment=my_smoke", "tracking.enabled=false"])
    assert (result.checkpoint / "config.json").is_file()
    assert result.final and "final/optimal/draw_rate" in result.metrics
    assert result.config_hash == api.load_config(["experiment=smoke", "tracking.enabled=false"]).config_hash
    assert capfd.readouterr().out == ""


def test_a_preset_that_shadows_a_shipped_one_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "presets"
    (mine / "experiment").mkdir(parents=True)
    (mine / "experiment" / "smoke.yaml").write_text("# @package _global_\nseed: 3\n")
    with pytest.raises(ConfigError, match=r"experiment=smoke is defined in more than one config folder: .*conf/"
                                          r"experiment/smoke\.yaml, .*presets/experiment/smoke\.yaml.*Rename"):
        api.load_config([], config_dirs=[mine])


def test_a_user_folder_that_is_missing_or_a_whole_tree_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        api.load_config([], config_dirs=[tmp_path / "nowhere"])
    (tmp_path / "config.yaml").write_text("defaults: []\n")
    with pytest.raises(ConfigError, match=r"holds a config\.yaml.*TTT_LAB_CONF"):
        api.load_config([], config_dirs=[tmp_path])


def test_training_in_several_processes_is_refused_in_one() -> None:
    with pytest.raises(TttLabError, match=r"train\.processes=2 needs 2 processes"):
        api.train(["train.processes=2"])


def test_a_broken_yaml_preset_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "bad.yaml").write_text("seed: 1\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*duplicate key seed"):
        api.load_config(["experiment=bad"], config_dirs=[tmp_path])
