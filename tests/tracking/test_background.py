"""The background logging helper: a real subprocess that opens the store while the command
works; a job comes back as a run, a cancelled helper leaves no run behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ttt_lab.errors import TttLabError
from ttt_lab.tracking.background import BackgroundLogger, Job
from ttt_lab.tracking.store import open_store


def test_a_job_becomes_one_finished_run_with_its_files(home: Path) -> None:
    uri, artifacts = f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts")
    result = home / "audit.json"
    result.write_text(json.dumps({"status": "PASS"}))
    run_id = BackgroundLogger(uri, artifacts).log(
        Job("bg", "audit-x", {"ttt.kind": "audit"}, {"p": "1"}, {"audit/x": 0.5}, [str(result)], "audit"))
    run = open_store(uri, artifacts).client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.metrics == {"audit/x": 0.5} and run.data.params == {"p": "1"}
    stored = Path(run.info.artifact_uri.removeprefix("file://")) / "audit" / "audit.json"
    assert json.loads(stored.read_text()) == {"status": "PASS"}


def test_cancel_stops_the_helper_and_logs_nothing(home: Path) -> None:
    uri, artifacts = f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts")
    logger = BackgroundLogger(uri, artifacts)
    logger.cancel()
    assert logger._proc.poll() is not None, "the helper process is gone"
    logger.cancel()  # twice is harmless
    store = open_store(uri, artifacts)
    assert store.client.get_experiment_by_name("bg") is None
    assert not store.client.search_runs([e.experiment_id for e in store.client.search_experiments()])


def test_an_unusable_store_is_the_helpers_one_line_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    logger = BackgroundLogger(f"sqlite:///{blocked}/mlflow.db", str(tmp_path / "a"))
    with pytest.raises(TttLabError) as e:
        logger.log(Job("bg", "x", {}))
    assert "\n" not in str(e.value) and str(e.value)
