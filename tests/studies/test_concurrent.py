"""Many hands on one study: `ttt-lab sweep` processes started together on one fresh home."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import cli, start
from tests.studies.helpers import split_runs, study

ARGS = ["experiment=smoke", "batch_size=8,16,32", "steps=1,2", "seed=0,1", "--name", "soak"]


@pytest.mark.slow
def test_four_sweeps_on_a_fresh_home_one_killed_run_every_trial_once(tmp_path: Path) -> None:
    """Four processes on a 12-trial study started at once on an empty home, one SIGKILLed at a
    random moment while it trains: the others run its trial again; afterwards every grid point
    has exactly one finished trial, MLflow's finished child runs match them one to one, the
    report counts them all, and no surviving output holds a traceback."""
    home = tmp_path / "runs"
    env = dict(os.environ, TTT_LAB_HOME=str(home))
    procs = [start("sweep", *ARGS, env=env, start_new_session=True) for _ in range(4)]
    rng = random.Random(time.time_ns())
    end = time.monotonic() + 240
    while time.monotonic() < end and not list((home / "studies" / "soak").glob("trial-*.log")):
        time.sleep(0.2)
    time.sleep(rng.uniform(0.0, 3.0))  # a random moment once trials run
    running = [i for i, p in enumerate(procs) if p.proc.poll() is None]
    assert running, "every sweep ended before the kill: " + " | ".join(p.text[-300:] for p in procs)
    victim = rng.choice(running)
    with contextlib.suppress(ProcessLookupError):  # it may end between the look and the kill
        os.killpg(procs[victim].proc.pid, signal.SIGKILL)
    for i, p in enumerate(procs):
        if i != victim:
            assert p.finish() in (0, 1), p.text
            assert "Traceback" not in p.text, p.text
    again = cli("sweep", *ARGS, env=env)  # whatever the kill left is finished here, nothing twice
    assert "Traceback" not in again.stdout + again.stderr

    trials = study(f"sqlite:///{home}/optuna.db", "soak").get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    points = [json.dumps(sorted(t.user_attrs["overrides"])) for t in complete]
    assert len(points) == len(set(points)) == 12, sorted(points)
    assert not [t for t in trials if t.state.name == "RUNNING"]
    (_parent,), children = split_runs(home, "soak")
    finished = {r.info.run_id for r in children if r.info.status == "FINISHED"}
    assert finished == {t.user_attrs["mlflow_run_id"] for t in complete}
    cli("report", "soak", env=env)
    verdict = json.loads((home / "reports" / "soak" / "verdict.json").read_text())
    assert sum(c["seeds"] for c in verdict["conditions"].values()) == 12
    for log in (home / "studies" / "soak").glob("trial-*.log"):
        assert "Traceback" not in log.read_text(), log
