"""Optuna's journal storage (`--storage journal:///path/study.log`): a study shared through one
file, no database server; the same claiming, mutex and recovery as SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import optuna
import pytest

from tests.studies.helpers import split_runs, two_sweeps_at_once
from ttt_lab.studies.journal import BEAT, HeartbeatJournalStorage
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.storage import GRACE_S, open_storage


def test_two_sweeps_of_one_grid_on_a_journal_run_each_point_once(home: Path, tmp_path: Path) -> None:
    url = f"journal://{tmp_path}/shared/study.log"
    two_sweeps_at_once(url, "journal-grid", ["batch_size=8,16", "experiment=smoke"])
    trials = optuna.load_study(study_name="journal-grid", storage=open_storage(url)).get_trials(deepcopy=False)
    assert sorted(t.user_attrs["overrides"][-1] for t in trials) == ["batch_size=16", "batch_size=8"]
    assert all(t.state.name == "COMPLETE" for t in trials)
    parents, children = split_runs(home, "journal-grid")
    finished = [r for r in children if r.info.status == "FINISHED"]
    assert len(parents) == 1 and Counter(int(r.data.tags["ttt.trial"]) for r in finished) == Counter({0: 1, 1: 1})
    assert (tmp_path / "shared" / "study.log.mutex").is_file()


def test_a_journal_trial_without_heartbeats_is_failed_by_optuna_s_stale_rule(tmp_path: Path) -> None:
    storage = open_storage(f"journal://{tmp_path}/study.log")
    assert isinstance(storage, HeartbeatJournalStorage)
    study = optuna.create_study(study_name="s", storage=storage)
    alive, dead = study.ask(), study.ask()
    storage.record_heartbeat(alive._trial_id)
    storage.set_trial_system_attr(dead._trial_id, BEAT, time.time() - GRACE_S - 1)
    assert storage._get_stale_trial_ids(study._study_id) == [dead._trial_id]
    optuna.storages.fail_stale_trials(study)
    states = {t.number: t.state.name for t in study.get_trials(deepcopy=False)}
    assert states == {alive.number: "RUNNING", dead.number: "FAIL"}


def test_a_journal_url_without_a_file_is_refused() -> None:
    with pytest.raises(StudyError, match="names no file"):
        open_storage("journal://")
