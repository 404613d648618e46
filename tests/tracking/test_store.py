"""TrackedRun against a real SQLite MLflow store: metrics wait for flush and go in batches of
MLflow's size, long values are cut to MLflow's limits, a failing block marks the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttt_lab.tracking import keys
from ttt_lab.tracking.store import (
    MAX_METRICS_PER_BATCH,
    MAX_PARAM_VAL_LENGTH,
    MAX_TAG_VAL_LENGTH,
    TrackedRun,
    flatten,
    metric_history,
    open_store,
)


@pytest.fixture
def store(home: Path):
    return open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))


def count_batches(store, monkeypatch) -> list[dict]:
    calls: list[dict] = []
    real = store.client.log_batch

    def spy(run_id, **kw):
        calls.append({k: len(v) for k, v in kw.items() if isinstance(v, list)})
        return real(run_id, **kw)

    monkeypatch.setattr(store.client, "log_batch", spy)
    return calls


def test_metrics_are_buffered_until_flush_then_sent_in_batches_of_mlflows_size(store, monkeypatch) -> None:
    run = TrackedRun(store, "t", name="r")
    calls = count_batches(store, monkeypatch)
    n = 2 * MAX_METRICS_PER_BATCH + 5
    for step in range(n):
        run.log_metrics({"train/reward": step / n}, step=step)
    assert calls == [] and store.client.get_run(run.run_id).data.metrics == {}
    run.flush()
    assert [c["metrics"] for c in calls] == [MAX_METRICS_PER_BATCH, MAX_METRICS_PER_BATCH, 5]
    history = metric_history(store, run.run_id, "train/reward")
    assert [s for s, _ in history] == list(range(n))
    run.flush()
    assert len(calls) == 3, "an empty buffer sends nothing"


def test_long_values_are_cut_to_mlflows_limits(store) -> None:
    run = TrackedRun(store, "t", name="r", tags={"long": "x" * (MAX_TAG_VAL_LENGTH + 50)})
    params = flatten({"a": {"b": "y" * (MAX_PARAM_VAL_LENGTH + 10)}, "k" * 300: 1})
    run.log_params(params)
    run.set_tags({"later": "z" * (MAX_TAG_VAL_LENGTH + 1)})
    data = store.client.get_run(run.run_id).data
    assert len(data.tags["long"]) == len(data.tags["later"]) == MAX_TAG_VAL_LENGTH
    assert len(data.params["a.b"]) == MAX_PARAM_VAL_LENGTH and data.params["a.b"].endswith("...")
    assert max(len(k) for k in data.params) == 250


def test_params_go_in_batches_of_a_hundred(store, monkeypatch) -> None:
    run = TrackedRun(store, "t", name="r")
    calls = count_batches(store, monkeypatch)
    run.log_params({f"p{i}": str(i) for i in range(250)})
    assert [c["params"] for c in calls] == [100, 100, 50]
    assert len(store.client.get_run(run.run_id).data.params) == 250


@pytest.mark.parametrize(("error", "status"), [(RuntimeError, "FAILED"), (KeyboardInterrupt, "KILLED"),
                                               (None, "FINISHED")])
def test_the_context_manager_ends_the_run_with_its_status_and_flushes(store, error, status) -> None:
    with pytest.raises(error) if error else _nothing(), TrackedRun(store, "t", name="r") as run:
        run.log_metrics({"m": 1.0}, step=3)
        if error:
            raise error("stop")
    got = store.client.get_run(run.run_id)
    assert got.info.status == status and got.data.metrics == {"m": 1.0}


def test_a_child_run_names_its_parent_and_a_reopened_run_is_running_again(store) -> None:
    parent = TrackedRun(store, "t", name="p")
    child = TrackedRun(store, "t", name="c", parent_run_id=parent.run_id)
    child.end()
    assert store.client.get_run(child.run_id).data.tags[keys.PARENT_RUN] == parent.run_id
    again = TrackedRun.reopen(store, child.run_id)
    assert again is not None and store.client.get_run(child.run_id).info.status == "RUNNING"
    assert TrackedRun.reopen(store, "0" * 32) is None


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_password_in_a_tag_param_or_text_never_reaches_the_store(store) -> None:
    secret = "pa@ss:w0rd"
    url = f"postgresql://user:{secret}@db.example:5432/optuna"
    run = TrackedRun(store, "t", name="r", tags={"ttt.command": f"ttt-lab sweep --storage {url}"})
    run.log_params({"tracking.uri": f"http://me:{secret}@mlflow:5000", "x": "sqlite:///db?password=" + secret})
    run.log_text(f"tracking:\n  uri: {url}\n", "config.yaml")
    run.end()
    data = store.client.get_run(run.run_id).data
    stored = " ".join([*data.tags.values(), *data.params.values()])
    assert "w0rd" not in stored and "user:***@db.example" in stored
    text = (Path(store.client.get_run(run.run_id).info.artifact_uri.removeprefix("file://")) / "config.yaml")
    assert "w0rd" not in text.read_text()


def test_runs_carry_mlflows_own_context_tags_and_ours_win(store) -> None:
    import getpass

    from ttt_lab.tracking.store import TrackedRun

    run = TrackedRun(store, "ctx", name="r", tags={"mlflow.source.name": "ttt-lab train"})
    tags = store.client.get_run(run.run_id).data.tags
    run.end()
    assert tags["mlflow.user"] == getpass.getuser() and tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.source.name"] == "ttt-lab train"
