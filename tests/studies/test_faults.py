"""Fault injection with real processes (slow: `make test-slow`): a worker stopped mid-trial."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import start
from tests.studies.helpers import study, study_created
from ttt_lab.studies.spec import from_args

pytestmark = pytest.mark.slow


def _wait(predicate, seconds: float, what: str):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_stopped_worker_past_the_trial_timeout_is_replaced_and_its_trial_run_again(home: Path) -> None:
    args = ["steps=1,6,2", "experiment=smoke", "batch_size=16"]
    name, url = from_args(args).name, f"sqlite:///{home}/optuna.db"
    proc = start("sweep", *args, "--workers", "2", "--trial-timeout", "60")

    def long_trial_pid():
        if not study_created(home / "optuna.db", name):
            return None
        for t in study(url, name).get_trials(deepcopy=False):
            if t.state.name == "RUNNING" and "steps=6" in (t.user_attrs.get("overrides") or []):
                return t.user_attrs.get("pid")
        return None

    pid = _wait(long_trial_pid, 300, "the long trial to run")
    os.kill(pid, signal.SIGSTOP)  # hung: no heartbeat thread, no exit, nothing said
    code = proc.finish(deadline_s=600)
    trials = study(url, name).get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 3 and len({t.user_attrs["config_hash"] for t in complete}) == 3, proc.text
    failed = [t for t in trials if t.state.name == "FAIL"]
    assert len(failed) == 1 and "trial-timeout" in failed[0].user_attrs.get("error", "")
    assert "ran past --trial-timeout" in proc.text and code == 1  # one attempt failed: the exit code says so
