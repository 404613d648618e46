"""`ttt-lab runs export` and `ttt_lab.api.export`: one row per trial, the metrics MLflow holds."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import FAILING_SWEEP, cli
from tests.studies.helpers import split_runs
from ttt_lab import api
from ttt_lab.studies.spec import from_args

pytestmark = pytest.mark.xdist_group("failing-sweep")
NAME = from_args(FAILING_SWEEP).name


def test_export_round_trips_what_mlflow_holds(failing_sweep, monkeypatch: pytest.MonkeyPatch) -> None:
    home, _ = failing_sweep
    monkeypatch.setenv("TTT_LAB_HOME", str(home))
    table = api.export(NAME)
    _, children = split_runs(home, NAME)
    assert sorted(r.run_id for r in table.rows) == sorted(c.info.run_id for c in children)
    by_id = {c.info.run_id: c for c in children}
    for row in table.rows:
        run = by_id[row.run_id]
        assert row.metrics == run.data.metrics
        assert row.config_hash == run.data.tags["ttt.config_hash"] and len(row.config_hash) == 12
        assert row.overrides == run.data.tags["ttt.trial_overrides"]
        assert row.seed == int(run.data.params["seed"])
    assert sorted(r.state for r in table.rows) == ["COMPLETE", "FAIL"]  # the failed trial is a row too


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_runs_export_writes_each_format(failing_sweep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        fmt: str) -> None:
    home, _ = failing_sweep
    monkeypatch.setenv("TTT_LAB_HOME", str(home))
    out = tmp_path / f"trials.{fmt}"
    cli("runs", "export", NAME, "--format", fmt, "--out", str(out))
    frame = {"csv": pd.read_csv, "parquet": pd.read_parquet, "json": pd.read_json}[fmt](out)
    expected = api.export(NAME).frame()
    assert len(frame) == 2 and list(frame.columns) == list(expected.columns)
    done = frame[frame["state"] == "COMPLETE"].iloc[0]
    want = expected[expected["state"] == "COMPLETE"].iloc[0]
    assert done["run_id"] == want["run_id"]
    assert done["eval/optimal/draw_rate"] == pytest.approx(want["eval/optimal/draw_rate"])


def test_export_to_stdout_and_bad_input(failing_sweep, monkeypatch: pytest.MonkeyPatch) -> None:
    home, _ = failing_sweep
    monkeypatch.setenv("TTT_LAB_HOME", str(home))
    rows = json.loads(cli("runs", "export", NAME, "--format", "json", "--out", "-").stdout)
    assert {r["trial"] for r in rows} == {0, 1} and all("/" not in r["study"] for r in rows)
    for args, message in ((["--format", "xlsx"], "is not one of csv, parquet, json"),
                          (["--format", "parquet", "--out", "-"], "Parquet is binary"),
                          (["--format", "csv", "--out", "t.parquet"], "--format csv and --out t.parquet disagree"),
                          (["--out", str(home)], "is a folder")):
        bad = cli("runs", "export", NAME, *args, check=False)
        assert bad.returncode == 2 and message in bad.stderr
    missing = cli("runs", "export", "no-such-study", check=False)
    assert missing.returncode == 2 and "No study 'no-such-study'" in missing.stderr


def test_the_format_follows_the_file_name_unless_named(failing_sweep, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--out trials.parquet` without `--format` writes Parquet (it wrote CSV under a .parquet name)."""
    home, _ = failing_sweep
    monkeypatch.setenv("TTT_LAB_HOME", str(home))
    for fmt, read in (("parquet", pd.read_parquet), ("json", pd.read_json)):
        out = tmp_path / f"trials.{fmt}"
        cli("runs", "export", NAME, "--out", str(out))
        assert len(read(out)) == 2
    plain = tmp_path / "trials.txt"
    cli("runs", "export", NAME, "--out", str(plain))
    assert len(pd.read_csv(plain)) == 2
