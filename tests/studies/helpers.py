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
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return parents, children


def study(storage: str, name: str):
    import optuna

    return optuna.load_study(study_name=name, storage=storage)
