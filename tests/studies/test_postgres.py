"""Searches spread over workers and over processes that share nothing but a real PostgreSQL
database (as on several machines): no trial lost or duplicated, one finished child run each."""

import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests import forked_cli
from tests.conftest import cli
from tests.studies import postgres
from tests.studies.helpers import check_each_point_once, split_runs, study, two_sweeps_at_once

pytestmark = [pytest.mark.skipif(postgres.binaries() is None, reason="PostgreSQL server binaries (pg_ctl, initdb) "
                                 "not found; .ci/run installs Debian's postgresql package")]


@pytest.fixture(scope="session")
def pg_url():
    with postgres.server() as url:
        yield url


def write_search(tmp_path: Path, name: str, n: int) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nkind: search\nn_trials: {n}\noverrides: [experiment=smoke]\n"
                    "params: {lr: 'tag(log, interval(1e-5, 1e-3))', temperature: 'interval(0.5, 1.5)'}\n"
                    "sampler: {name: tpe, seed: 0, n_startup_trials: 2}\n")
    return path


def check_study(home: Path, url: str, name: str, n: int) -> None:
    trials = study(url, name).get_trials(deepcopy=False)
    assert [t.number for t in trials] == list(range(len(trials)))
    assert len(trials) == n  # counting and asking happen under the study's mutex: no overshoot
    assert all(t.state.name == "COMPLETE" for t in trials)
    (parent,), children = split_runs(home, name)
    finished = [r for r in children if r.info.status == "FINISHED"]
    per_trial = Counter(int(r.data.tags["ttt.trial"]) for r in finished)
    assert per_trial == Counter({t.number: 1 for t in trials})
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert {t.user_attrs["mlflow_run_id"] for t in trials} == {r.info.run_id for r in finished}


@pytest.mark.slow  # in make test: a search from two processes on one database (below), local workers on SQLite
def test_search_with_two_local_workers(home: Path, tmp_path: Path, pg_url: str) -> None:
    spec = write_search(tmp_path, "pg-local", 4)
    out = cli("sweep", str(spec), "--workers", "2", "--storage", pg_url)
    assert "2 worker(s)" in out.stdout
    check_study(home, pg_url, "pg-local", 4)


def test_search_from_two_processes_sharing_only_the_database(home: Path, tmp_path: Path, pg_url: str) -> None:
    spec = write_search(tmp_path, "pg-machines", 4)
    env = dict(os.environ, TTT_LAB_OPTUNA_STORAGE=pg_url)
    # Both start at once: one creates the study and its parent run, the other finds them.
    first = forked_cli.popen(["sweep", str(spec)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    second = forked_cli.popen(["sweep", str(spec)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for p in (first, second):
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, out + err
    check_study(home, pg_url, "pg-machines", 4)


def test_two_machines_enqueueing_one_grid_at_once_run_each_point_once(home: Path, pg_url: str) -> None:
    procs = two_sweeps_at_once(pg_url, "pg-grid-twice", ["batch_size=8,16", "experiment=smoke"])
    check_each_point_once(home, pg_url, "pg-grid-twice", 2)
    # The storage URL (with its password) was on both command lines: it is in no file under the
    # home (the MLflow SQLite store, the report, trial logs) and on no console line.
    report = cli("report", "pg-grid-twice")
    secret = postgres.PASSWORD.encode()
    leaked = [str(p) for p in home.rglob("*") if p.is_file() and secret in p.read_bytes()]
    assert not leaked, leaked
    assert all(postgres.PASSWORD not in p.text for p in procs) and postgres.PASSWORD not in report.stdout
    assert "***@127.0.0.1" in (home / "reports" / "pg-grid-twice" / "report.md").read_text()


def test_wrong_credentials_fail_before_any_trial(home: Path, pg_url: str) -> None:
    bad = pg_url.replace(postgres.PASSWORD, "wrong")
    out = cli("sweep", "batch_size=8,16", "experiment=smoke", "--storage", bad, check=False)
    assert out.returncode == 2
    assert "refused the credentials" in out.stderr and "wrong" not in out.stderr
    assert not (home / "studies").exists()
