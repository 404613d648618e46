"""MLflow store: checked before use, quiet, and written to in batches.

`open_store` fails fast with a one-paragraph error when the store cannot be used (an
unwritable folder for SQLite, an unreachable tracking server), instead of MLflow's long
retries. `TrackedRun` buffers metrics and sends them with `log_batch`, one call per flush.
"""

from __future__ import annotations

import logging
import os
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ttt_lab import timing
from ttt_lab.config.flatten import flat_items
from ttt_lab.errors import TttLabError
from ttt_lab.redact import redact, redact_item
from ttt_lab.sqlite_files import check_sqlite_file
from ttt_lab.tracking import keys
from ttt_lab.tracking.outbox import FALLBACK, JOURNAL_SUFFIX, Contents, Journal, Op, Outbox

os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")  # a server that is down: the run's outbox waits,
os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")  # not MLflow's minutes of retries per call

import contextlib

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

MAX_ENTITY_KEY_LENGTH = 250
MAX_PARAM_VAL_LENGTH = 6000
MAX_TAG_VAL_LENGTH = 8000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
"""MLflow's documented limits for keys, values and one `log_batch` call (REST API reference);
written here so that an internal module moving in MLflow cannot break ttt-lab."""

for name in ("mlflow", "alembic", "alembic.runtime.migration", "sqlalchemy"):
    logging.getLogger(name).setLevel(logging.WARNING)
warnings.filterwarnings("ignore", module=r"mlflow(\..*)?")


class TrackingError(TttLabError):
    pass


@dataclass
class Store:
    uri: str
    artifacts: str
    client: MlflowClient
    home: str = "runs"
    """Where a run that outlived its tracking server leaves what it could not send."""
    outage_wait_s: float = 60.0

    @property
    def remote(self) -> bool:
        return self.uri.startswith(("http://", "https://"))

    def experiment_id(self, name: str) -> str:
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            return exp.experiment_id
        location = Path(self.artifacts, name).resolve().as_uri() if self.artifacts else None
        try:
            return self.client.create_experiment(name, artifact_location=location,  # the UI opens it as training
                                                 tags={keys.EXPERIMENT_KIND: keys.MODEL_TRAINING})
        except mlflow.exceptions.MlflowException:
            exp = self.client.get_experiment_by_name(name)  # created meanwhile by another process
            if exp is None:
                raise
            return exp.experiment_id


def _check_sqlite(uri: str) -> None:
    path = Path(uri.removeprefix("sqlite:///"))
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".ttt-lab-write-test-{os.getpid()}"  # one per process: several start at once
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise TrackingError(
            f"cannot write the tracking store {path} ({e.strerror or e}). Make {folder} writable, "
            "set TTT_LAB_HOME to a writable folder, or point tracking.uri elsewhere."
        ) from e
    check_sqlite_file(path, "tracking store")


def _check_server(uri: str) -> None:
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            if r.status == 200:
                return
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise TrackingError(
            f"cannot reach the MLflow tracking server at {uri} ({reason}). Start it (e.g. `ttt-lab ui` "
            "or `mlflow server`), fix tracking.uri, or use the local store with tracking=local."
        ) from e


def open_store(uri: str, artifacts: str, home: str = "runs", outage_wait_s: float = 60.0) -> Store:
    if uri.startswith("sqlite:///"):
        _check_sqlite(uri)
        if artifacts:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
    elif uri.startswith(("http://", "https://")):
        _check_server(uri)
    elif uri.startswith(("file:", "/")) or "://" not in uri:
        raise TrackingError(
            f"tracking.uri {uri!r} is a file store, which MLflow 3 refuses. Use sqlite:///path/mlflow.db "
            "(the default under runs/), a postgresql:// database, or an http:// tracking server."
        )
    mlflow.set_tracking_uri(uri)
    from ttt_lab.first_use import one_creator

    with one_creator(uri):  # the client creates (or migrates) the store's schema: one process at a time
        client = MlflowClient(tracking_uri=uri)
    return Store(uri, artifacts, client, home, outage_wait_s)


def flatten(tree: Mapping[str, Any]) -> dict[str, str]:
    """Dotted keys to string values, cut to MLflow's limits (never failing on long values);
    `TrackedRun.log_params` redacts them."""
    out: dict[str, str] = {}
    for key, v in flat_items(tree).items():
        text = str(v)
        if len(text) > MAX_PARAM_VAL_LENGTH:
            text = text[: MAX_PARAM_VAL_LENGTH - 3] + "..."
        out[key[:MAX_ENTITY_KEY_LENGTH]] = text
    return out


def _chunks(items: list, n: int) -> Iterable[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


class TrackedRun:
    """One MLflow run; use as a context manager so a failure or Ctrl-C marks it FAILED/KILLED."""

    def __init__(self, store: Store, experiment: str, name: str | None = None,
                 tags: Mapping[str, str] | None = None, parent_run_id: str | None = None) -> None:
        self.store = store
        from mlflow.tracking.context.registry import resolve_tags

        context = dict(resolve_tags(dict(tags or {})))  # MLflow's own context (user, source) as start_run adds it
        if parent_run_id:
            context[keys.PARENT_RUN] = parent_run_id
        tags = {k: redact_item(k, str(v))[:MAX_TAG_VAL_LENGTH] for k, v in context.items()}
        with timing.phase("tracking"):
            run = store.client.create_run(store.experiment_id(experiment), run_name=redact(name) if name else name,
                                          tags=tags)
        self._start(run.info.run_id, run.info.artifact_uri)

    def _start(self, run_id: str, artifact_uri: str) -> None:
        self.run_id: str = run_id
        self.artifact_uri: str = artifact_uri
        self._metrics: list[Metric] = []
        journal = Path(self.store.home) / FALLBACK / f"{run_id}{JOURNAL_SUFFIX}" if self.store.remote else None
        self._outbox = Outbox(self._send, self.store.remote, journal, run_id)

    @classmethod
    def reopen(cls, store: Store, run_id: str, running: bool = True) -> TrackedRun | None:
        """Continue an existing run (a resumed training; `running=False`: only to deliver what it
        kept, its status left as it is); None if the store has no such run."""
        try:
            info = store.client.get_run(run_id).info
        except mlflow.exceptions.MlflowException:
            return None
        run = cls.__new__(cls)
        run.store = store
        run._start(run_id, info.artifact_uri)
        if running:
            store.client.update_run(run_id, status="RUNNING")
        return run

    def _send(self, op: Op) -> None:
        c, rid = self.store.client, self.run_id
        if op.kind == "metrics":
            c.log_batch(rid, metrics=[Metric(*m) for m in op.data], synchronous=True)
        elif op.kind == "params":
            c.log_batch(rid, params=[Param(k, v) for k, v in op.data.items()], synchronous=True)
        elif op.kind == "tags":
            c.log_batch(rid, tags=[RunTag(k, v) for k, v in op.data.items()], synchronous=True)
        elif op.kind == "text":
            c.log_text(rid, op.data, str(op.extra))  # a text op always names its file
        elif op.kind == "artifact":
            c.log_artifact(rid, op.data, op.extra)
        elif op.kind == "status":
            c.set_terminated(rid, op.data)
        else:
            raise ValueError(f"unknown tracking op {op.kind!r}")

    def _put(self, op: Op) -> None:
        with timing.phase("tracking"):
            self._outbox.put(op)

    def replay(self, journal: Journal, contents: Contents) -> bool:
        """Send the undelivered ops of a run's journal (locked by the caller), in order, acknowledging
        each there; the journal is removed once all are delivered. False if the server is still
        unreachable (the journal is kept and unlocked)."""
        box = self._outbox
        box.journal, box.pending, box.next_seq, box.announce = journal, list(contents.unacked), contents.next_seq, False
        try:
            return box.drain()
        finally:
            if box.journal is not None:  # not all delivered: kept for the next sync
                box.journal = None
                journal.close()

    def log_params(self, params: Mapping[str, str]) -> None:
        items = [(k, redact_item(k, str(v))) for k, v in params.items()]
        for chunk in _chunks(items, MAX_PARAMS_TAGS_PER_BATCH):
            self._put(Op("params", dict(chunk)))

    def set_tags(self, tags: Mapping[str, str]) -> None:
        items = [(k, redact_item(k, str(v))[:MAX_TAG_VAL_LENGTH]) for k, v in tags.items()]
        for chunk in _chunks(items, MAX_PARAMS_TAGS_PER_BATCH):
            self._put(Op("tags", dict(chunk)))

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        """Buffered: nothing is sent until `flush()` (or the end of the run)."""
        now = int(time.time() * 1000)
        self._metrics += [Metric(k, float(v), now, step) for k, v in metrics.items()]

    def flush(self) -> None:
        """Hand the buffered metrics to the outbox; the buffer is emptied first, so a batch the
        server refuses (raised here) is not offered again with every later flush."""
        metrics, self._metrics = self._metrics, []
        for chunk in _chunks(metrics, MAX_METRICS_PER_BATCH):
            self._put(Op("metrics", [(m.key, m.value, m.timestamp, m.step) for m in chunk]))

    def local_artifact_dir(self) -> Path | None:
        """The run's artifact folder when artifacts are local files (write there, no copy)."""
        if self.artifact_uri.startswith("file://"):
            from urllib.parse import unquote, urlparse

            path = Path(unquote(urlparse(self.artifact_uri).path))
            path.mkdir(parents=True, exist_ok=True)
            return path
        if self.artifact_uri.startswith("/"):
            Path(self.artifact_uri).mkdir(parents=True, exist_ok=True)
            return Path(self.artifact_uri)
        return None

    def log_artifact(self, path: Path, subdir: str | None = None) -> None:
        local = self.local_artifact_dir()
        target = (local / subdir if subdir else local) if local else None
        if target is not None and Path(path).resolve().parent == target.resolve():
            return
        self._put(Op("artifact", str(path), subdir))

    def log_text(self, text: str, name: str) -> None:
        self._put(Op("text", redact(text), name))

    def end(self, status: str = "FINISHED") -> Path | None:
        """Flush and close; the fallback file when the tracking server never came back."""
        self.flush()
        self._put(Op("status", status))
        with timing.phase("tracking"):
            return self._outbox.close(self.store.outage_wait_s)

    def __enter__(self) -> TrackedRun:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.end("FINISHED")
        else:
            status = "KILLED" if issubclass(exc_type, KeyboardInterrupt) else "FAILED"
            with contextlib.suppress(Exception):
                self.end(status)


def terminate(store: Store, run_id: str, status: str, tags: Mapping[str, str] | None = None) -> None:
    """Set a run's final status (and tags) from outside it, e.g. a trial whose worker died."""
    if tags:
        items = [RunTag(k, redact_item(k, str(v))[:MAX_TAG_VAL_LENGTH]) for k, v in tags.items()]
        store.client.log_batch(run_id, tags=items, synchronous=True)
    store.client.set_terminated(run_id, status)


def run_status(store: Store, run_id: str) -> str | None:
    try:
        return store.client.get_run(run_id).info.status
    except mlflow.exceptions.MlflowException:
        return None


def child_runs(store: Store, experiment: str, parent_run_id: str) -> list:
    """The runs whose `mlflow.parentRunId` is `parent_run_id` (MLflow `Run` objects)."""
    exp = store.client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    return store.client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_run_id}'",
                                    max_results=50_000)


def metric_history(store: Store, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in store.client.get_metric_history(run_id, key))


def find_parent(store: Store, study_or_run: str):
    """A study's parent run, by study (experiment) name or by the parent run's id; None if neither."""
    exp = store.client.get_experiment_by_name(study_or_run)
    if exp is not None:
        parents = store.client.search_runs([exp.experiment_id], "tags.`ttt.kind` = 'sweep'",
                                           order_by=["attributes.start_time DESC"], max_results=1)
        return parents[0] if parents else None
    try:
        run = store.client.get_run(study_or_run)
    except mlflow.exceptions.MlflowException:
        return None
    return run if run.data.tags.get(keys.KIND) == "sweep" else None


def experiment_name(store: Store, experiment_id: str) -> str:
    return store.client.get_experiment(experiment_id).name


def get_run(store: Store, run_id: str):
    try:
        return store.client.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        return None


def read_text_artifact(store: Store, run_id: str, path: str) -> str | None:
    """A small text artifact of a run, or None when the run has none by that name."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        try:
            local = store.client.download_artifacts(run_id, path, d)
        except (mlflow.exceptions.MlflowException, OSError):
            return None
        return Path(local).read_text()


def search_all(store: Store, filter_string: str) -> list:
    """Runs of every experiment matching an MLflow filter string."""
    ids = [e.experiment_id for e in store.client.search_experiments()]
    return store.client.search_runs(ids, filter_string, max_results=5000) if ids else []
