from __future__ import annotations

from pathlib import Path


def mlflow_runs(home: Path, experiment: str):
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    return [] if exp is None else client.search_runs([exp.experiment_id], max_results=1000)


def split_runs(home: Path, experiment: str):
    runs = mlflow_runs(home, experiment)
    parents = [r for r in runs if r.data.tags.get("ttt.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags  # the trials' runs: not the
                and r.data.tags.get("ttt.kind") != "condition"]  # runs that hold each condition's aggregates
    return parents, children


def study_created(path: Path, name: str) -> bool:
    """Whether the sweep has created study `name` in the SQLite file `path`, read without Optuna:
    opening a store that is still being created makes Optuna run its migrations beside the
    sweep's own (seen: "UNIQUE constraint failed: alembic_version.version_num")."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT 1 FROM studies WHERE study_name = ?", (name,)).fetchone() is not None
    except sqlite3.Error:
        return False


def study(storage: str, name: str):
    import optuna

    return optuna.load_study(study_name=name, storage=storage)


UPDATING = "another process is updating study"


def two_sweeps_at_once(url: str, name: str, args: list[str]) -> list:
    """Two `ttt-lab sweep` processes started while the test holds the study's mutex, so both
    are past creating the study and waiting to enqueue before either goes on."""
    from tests.conftest import start
    from ttt_lab.studies.mutex import study_mutex
    from ttt_lab.studies.storage import open_storage

    procs = []
    with study_mutex(open_storage(url), url, name):
        for _ in range(2):
            procs.append(start("sweep", *args, "--name", name, "--storage", url))
            procs[-1].wait_for(UPDATING)
    for p in procs:
        assert p.finish() == 0, p.text
    return procs


def check_each_point_once(home: Path, url: str, name: str, n: int) -> None:
    trials = study(url, name).get_trials(deepcopy=False)
    assert len(trials) == n, [t.user_attrs.get("overrides") for t in trials]
    assert len({t.user_attrs["config_hash"] for t in trials}) == n
    assert all(t.state.name == "COMPLETE" for t in trials)
    parents, children = split_runs(home, name)
    assert len(parents) == 1
    assert sorted(int(r.data.tags["ttt.trial"]) for r in children if r.info.status == "FINISHED") == list(range(n))
