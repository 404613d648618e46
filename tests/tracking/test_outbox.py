"""The outbox against a real `mlflow server`: outages are told by exception type (a connection
error, a transient status), a refused request is raised and never queued, and what is queued
during an outage is on disk, in order, before `put` returns, and reaches the server once.

"The server is gone" is a real client pointed at an address nothing listens on, or a real HTTP
server that answers every request with one status (a proxy in front of a server that is down)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import free_port
from tests.tracking.conftest import Server
from ttt_lab.tracking.outbox import (
    FALLBACK,
    Journal,
    JournalBusy,
    JournalDamaged,
    Op,
    Queued,
    is_outage,
    read_journal,
)
from ttt_lab.tracking.runs import sync_fallbacks
from ttt_lab.tracking.store import Store, TrackedRun, open_store

pytestmark = pytest.mark.xdist_group("mlflow-server")


@pytest.fixture(autouse=True)
def no_client_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's client retries a failed request with back-off; the outbox's own retry is what is
    tested, so each request here is tried once."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def _dead_uri() -> str:
    return f"http://127.0.0.1:{free_port()}"


def _error_of(call) -> BaseException:
    try:
        call()
    except Exception as e:
        return e
    raise AssertionError("the call succeeded")


class Answering(http.server.ThreadingHTTPServer):
    """A real HTTP server that answers every request with `status` and a plain-text body."""

    def __init__(self, status: int) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"upstream says no")

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def answering() -> Iterator[callable]:
    servers: list[Answering] = []

    def make(status: int) -> Answering:
        s = Answering(status)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.shutdown()
        s.server_close()


# --- what is an outage -------------------------------------------------------------------------


def test_an_unreachable_server_is_an_outage_by_type_whatever_the_message_says() -> None:
    e = _error_of(lambda: MlflowClient(_dead_uri()).get_experiment_by_name("x"))
    assert is_outage(e)
    try:
        try:
            raise e
        except Exception:
            raise mlflow.exceptions.MlflowException("the words changed in a new MLflow release") from None
    except mlflow.exceptions.MlflowException as reworded:
        reworded.__context__ = e  # what `raise` inside `except` records, as MLflow's client does
        assert is_outage(reworded)
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    worded_like_one = mlflow.exceptions.MlflowException(
        "API request to http://h/api failed with exception connection refused", error_code=INVALID_PARAMETER_VALUE)
    assert not is_outage(worded_like_one), "the old message match called this an outage"


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_proxy_answering_that_the_server_is_down_is_an_outage(answering, status: int) -> None:
    proxy = answering(status)
    assert is_outage(_error_of(lambda: MlflowClient(proxy.uri).get_experiment_by_name("x")))


@pytest.mark.parametrize("status", [400, 403, 404])
def test_a_refusing_answer_is_not_an_outage(answering, status: int) -> None:
    proxy = answering(status)
    assert not is_outage(_error_of(lambda: MlflowClient(proxy.uri).get_experiment_by_name("x")))


# --- a refused request is reported, not queued ------------------------------------------------


def _store(server: Server, home: Path, outage_wait_s: float = 0.0) -> Store:
    return open_store(server.uri, str(home / "mlartifacts"), str(home), outage_wait_s)


def test_a_bad_metric_name_is_raised_at_once_and_what_follows_is_delivered(
        module_server: Server, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    store = _store(module_server, tmp_path)
    run = TrackedRun(store, "outbox-refused", name="refused")
    run.log_metrics({"a/../b": 1.0}, step=1)
    with pytest.raises(mlflow.exceptions.MlflowException) as e:
        run.flush()
    assert not is_outage(e.value) and "a/../b" in str(e.value)
    run.log_metrics({"ok": 2.0}, step=2)
    run.flush()
    assert run.end() is None
    client = module_server.client()
    assert [(m.step, m.value) for m in client.get_metric_history(run.run_id, "ok")] == [(2, 2.0)]
    assert client.get_run(run.run_id).info.status == "FINISHED"
    assert not (tmp_path / FALLBACK).exists() or not any((tmp_path / FALLBACK).iterdir())
    assert "cannot be reached" not in capsys.readouterr().err


# --- an outage: on disk, in order, delivered once ---------------------------------------------


def _ops_on_disk(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if "seq" in r]


def test_sends_queued_in_an_outage_are_on_disk_in_order_and_runs_sync_delivers_them_once(
        module_server: Server, tmp_path: Path) -> None:
    live = _store(module_server, tmp_path)
    run = TrackedRun(live, "outbox-outage", name="outage")
    for step in range(1, 4):
        run.log_metrics({"m": float(step)}, step=step)
        run.flush()
    live.client = MlflowClient(_dead_uri())  # the server is gone from here on
    journal = tmp_path / FALLBACK / f"{run.run_id}.jsonl"
    for step in range(4, 21):
        run.log_metrics({"m": float(step)}, step=step)
        run.flush()
        steps = [m[3] for r in _ops_on_disk(journal) for m in r["data"]]
        assert steps == list(range(4, step + 1)), "each send is on disk, in order, when put returns"
    run.set_tags({"after": "outage"})
    assert run.end() == journal and journal.exists()
    assert [r["kind"] for r in _ops_on_disk(journal)][-2:] == ["tags", "status"]

    live.client = module_server.client()
    assert sync_fallbacks(live) == [(run.run_id, 17 + 2)]
    assert not journal.exists()
    history = module_server.client().get_metric_history(run.run_id, "m")
    assert sorted(m.step for m in history) == list(range(1, 21)), "every step once"
    assert [m.step for m in sorted(history, key=lambda m: (m.timestamp, m.step))] == list(range(1, 21))
    got = module_server.client().get_run(run.run_id)
    assert got.info.status == "FINISHED" and got.data.tags["after"] == "outage"
    assert sync_fallbacks(live) == [], "nothing is sent twice"


def test_a_resumed_run_sends_what_its_killed_process_kept_first(module_server: Server, tmp_path: Path) -> None:
    live = _store(module_server, tmp_path)
    run = TrackedRun(live, "outbox-resumed", name="resumed")
    path = tmp_path / FALLBACK / f"{run.run_id}.jsonl"
    killed, _ = Journal.create(path, run.run_id)  # what a process killed during an outage leaves
    for seq, step in enumerate((1, 2)):
        killed.append(Queued(seq, Op("metrics", [["m", float(step), 1000 + step, step]])))
    killed.close()

    resumed = TrackedRun.reopen(live, run.run_id)
    live.client = MlflowClient(_dead_uri())
    resumed.log_metrics({"m": 3.0}, step=3)
    resumed.flush()
    assert [r["seq"] for r in _ops_on_disk(path)] == [0, 1, 2], "numbered after what the file held"
    live.client = module_server.client()
    assert resumed.end() is None and not path.exists()
    history = module_server.client().get_metric_history(run.run_id, "m")
    assert [m.step for m in sorted(history, key=lambda m: m.timestamp)] == [1, 2, 3]


def test_runs_sync_leaves_a_live_runs_journal_to_the_run(module_server: Server, tmp_path: Path) -> None:
    live = _store(module_server, tmp_path)
    run = TrackedRun(live, "outbox-live", name="live")
    live.client = MlflowClient(_dead_uri())
    run.log_metrics({"m": 1.0}, step=1)
    run.flush()
    path = tmp_path / FALLBACK / f"{run.run_id}.jsonl"
    with pytest.raises(JournalBusy):
        Journal.take(path)
    live.client = module_server.client()
    assert sync_fallbacks(open_store(module_server.uri, "", str(tmp_path))) == [], "the live run sends its own"
    assert run.end() is None and not path.exists()
    assert len(module_server.client().get_metric_history(run.run_id, "m")) == 1


# --- the journal file --------------------------------------------------------------------------


def test_a_torn_last_line_is_left_out_and_acknowledged_ops_are_not_sent_again(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    journal, _ = Journal.create(path, "r")
    queued = [Queued(i, Op("params", {"k": str(i)})) for i in range(4)]
    for q in queued:
        journal.append(q)
    journal.ack(queued[0])
    journal.ack(queued[1])
    journal.close()
    with path.open("a") as f:
        f.write('{"seq": 4, "kind": "par')  # the process died inside this write
    contents = read_journal(path)
    assert contents.run_id == "r" and [q.seq for q in contents.unacked] == [2, 3] and contents.next_seq == 4


def test_a_damaged_line_inside_the_journal_is_named(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"run_id": "r"}\n{"seq": 0, "ki\n{"seq": 1, "kind": "status", "data": "FINISHED"}\n')
    with pytest.raises(JournalDamaged) as e:
        read_journal(path)
    assert str(path) in str(e.value) and "line 2" in str(e.value)
