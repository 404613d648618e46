import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import forked_cli
from tests.conftest import FAILING_SWEEP, cli
from tests.studies.helpers import check_each_point_once, split_runs, study, two_sweeps_at_once
from ttt_lab.studies.spec import from_args

SMOKE = ["experiment=smoke"]


SIZES = (4, 8, 12, 16)
"""The README's `batch_size=64,128,256,512`, at smoke sizes (a grid of four sizes, a few games each)."""


def test_batch_size_sweep_as_typed(home: Path) -> None:
    args = [f"batch_size={','.join(map(str, SIZES))}", *SMOKE]
    dry = cli("sweep", *args, "--dry-run")
    for bs in SIZES:
        assert f"batch_size={bs}" in dry.stdout
    assert "4 trials" in dry.stdout
    assert not (home / "mlflow.db").exists() or not split_runs(home, from_args(args).name)[0]

    out = cli("sweep", *args)
    assert "trial 3 COMPLETE" in out.stdout, out.stdout
    name = from_args(args).name
    (parent,), children = split_runs(home, name)
    assert len(children) == 4
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")
    found = mlflow.search_runs(experiment_names=[name], output_format="list",
                               filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(int(r.data.params["train.phases.0.batch_size"]) for r in found) == list(SIZES)
    assert all(r.info.status == "FINISHED" and r.data.tags["optuna.state"] == "COMPLETE" for r in found)
    assert {r.data.tags["ttt.trial_overrides"] for r in found} == {f"batch_size={b}" for b in SIZES}
    assert parent.info.status == "FINISHED" and "plan.json" in os.listdir(parent.info.artifact_uri.removeprefix("file://"))

    again = cli("sweep", *args)
    assert "nothing to run" in again.stdout
    assert len(split_runs(home, name)[1]) == 4


def _wait_for(predicate, timeout: float = 300.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# slow: a sweep killed mid-trial, then run again (minutes on a busy machine). make test keeps the parts:
# recover() failing a dead worker's trial (test_recovery.py), a killed worker's trial failed and run again
# (test_launcher.py), a finished sweep run again runs nothing (test_batch_size_sweep_as_typed).
@pytest.mark.slow
def test_killed_sweep_resumes_without_rerunning_finished_trials(home: Path, tmp_path: Path) -> None:
    # trial 1 trains long enough to be caught mid-way: its steps, not its start-up, last seconds (at 8
    # steps a smoke trial's training was a fraction of a second, and a busy test run missed it)
    args = ["steps=1,400,2", *SMOKE, "batch_size=16"]
    name = from_args(args).name
    storage = f"sqlite:///{home}/optuna.db"
    log = (tmp_path / "sweep.log").open("w")
    proc = forked_cli.popen(["sweep", *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def second_trial_training() -> bool:
        assert proc.poll() is None, (tmp_path / "sweep.log").read_text()
        if "worker(s)" not in (tmp_path / "sweep.log").read_text():
            return False  # the sweep is still creating its stores: opening them now would race its migrations
        try:
            trials = study(storage, name).get_trials(deepcopy=False)
        except KeyError:
            return False
        return (len(trials) > 1 and trials[0].state.name == "COMPLETE" and trials[1].state.name == "RUNNING"
                and "mlflow_run_id" in trials[1].user_attrs)

    try:
        _wait_for(second_trial_training, what="trial 1 to be training")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    killed = study(storage, name).trials[1]
    assert killed.state.name == "RUNNING"

    out = cli("sweep", *args)
    assert "marked failed" in out.stdout
    trials = study(storage, name).get_trials(deepcopy=False)
    assert trials[1].state.name == "FAIL"
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 3
    assert len({t.user_attrs["config_hash"] for t in complete}) == 3
    assert sum(t.user_attrs["config_hash"] == trials[0].user_attrs["config_hash"] for t in trials) == 1
    _, children = split_runs(home, name)
    finished = [r for r in children if r.info.status == "FINISHED"]
    assert len(finished) == 3
    by_id = {r.info.run_id: r for r in children}
    assert by_id[killed.user_attrs["mlflow_run_id"]].info.status == "FAILED"
    assert by_id[killed.user_attrs["mlflow_run_id"]].data.tags["optuna.state"] == "FAIL"


def test_pruned_trials_are_pruned_in_optuna_and_tagged_in_mlflow(home: Path, tmp_path: Path) -> None:
    spec = tmp_path / "prune.yaml"
    spec.write_text(
        "name: prune-test\nkind: search\nn_trials: 2\n"
        "overrides: [experiment=smoke, steps=2, train.eval_every=1]\n"
        "params: {lr: 'tag(log, interval(1e-5, 1e-3))'}\n"
        "sampler: {name: random, seed: 0}\n"
        "pruner: {name: threshold, lower: 0.5}\n"
        "objective: {metric: eval/random/win_rate, direction: maximize}\n")
    cli("sweep", str(spec))
    trials = study(f"sqlite:///{home}/optuna.db", "prune-test").trials
    assert [t.state.name for t in trials] == ["PRUNED", "PRUNED"]
    assert all(t.intermediate_values == {1: 0.0} for t in trials)
    _, children = split_runs(home, "prune-test")
    assert len(children) == 2
    assert all(r.data.tags.get("pruned") == "true" and r.info.status == "FINISHED" for r in children)


@pytest.mark.xdist_group("failing-sweep")
@pytest.mark.xdist_group("report")
def test_a_failing_trial_is_recorded_and_the_sweep_goes_on(failing_sweep) -> None:
    home, out = failing_sweep
    assert out.returncode == 1
    assert "trial 0 FAIL" in out.stdout and "trial 1 COMPLETE" in out.stdout
    _, children = split_runs(home, from_args(FAILING_SWEEP).name)
    failed = [r for r in children if r.info.status == "FAILED"]
    assert len(failed) == 1 and "max_new_tokens" in failed[0].data.tags["ttt.error"]


def test_max_failures_stops_claiming(home: Path) -> None:
    args = ["max_new_tokens=1,2,3", *SMOKE]
    out = cli("sweep", *args, "--max-failures", "1", check=False)
    assert out.returncode == 1 and "--max-failures 1" in out.stdout
    states = [t.state.name for t in study(f"sqlite:///{home}/optuna.db", from_args(args).name).trials]
    assert states.count("FAIL") == 1 and states.count("WAITING") == 2
    cli("sweep", *args, check=False)
    states = [t.state.name for t in study(f"sqlite:///{home}/optuna.db", from_args(args).name).trials]
    assert "WAITING" not in states and len(states) == 4  # the two left waiting ran, the failed one again


@pytest.mark.parametrize(("args", "message"), [
    (["no_such_key=1,2"], "no_such_key"),
    (["opponent=glob(nothing*)"], "no values"),
    (["loss_type=interval(0,1)", "--trials", "2"], "categorical"),
    (["batch_size=64,128", "--storage", "postgresql://u:p@127.0.0.1:1/db"], "cannot reach the Optuna storage"),
    (["batch_size=64,128", "--name", "../../x"], "not a valid name"),
    (["batch_size=64,64"], "more than once"),
    (["batch_size=64,128", "--name", "/tmp/abs"], "not a valid name"),
    (["batch_size=64,128", "tracking.experiment=../up"], "tracking.experiment"),
])
def test_bad_sweeps_fail_before_any_trial(home: Path, args, message) -> None:
    out = cli("sweep", *args, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr
    assert not (home / "studies").exists()


# slow: in make test, two sweeps of one grid on a journal (test_journal.py) and on PostgreSQL, and two
# workers claiming from one SQLite store (test_launcher.py)
@pytest.mark.slow
def test_two_sweeps_of_one_grid_at_once_run_each_point_once(home: Path) -> None:
    url = f"sqlite:///{home}/optuna.db"
    two_sweeps_at_once(url, "grid-twice", ["batch_size=8,16", *SMOKE])
    check_each_point_once(home, url, "grid-twice", 2)
