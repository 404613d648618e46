"""What `ttt-lab ui` serves: the MLflow UI on the project's store, or optuna-dashboard on a study's
storage; the command line of each server, where it answers, and `Server.serve`, which starts it,
waits until it answers and stops it (its whole process group) when interrupted."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ttt_lab.api._config import load_config
from ttt_lab.errors import TttLabError


class UiError(TttLabError):
    pass


@dataclass(frozen=True)
class Server:
    name: str
    cmd: list[str]
    env: dict[str, str]
    ready_url: str
    """Answers 200 once the server is up."""
    url: str
    """The page to open."""
    log_path: Path
    serves: str
    """What anyone who reaches the port sees (for the warning on a non-loopback host)."""
    source: str
    """The store or storage it serves (`store URI`), secrets redacted."""

    def serve(self, ready: Callable[[], None] = lambda: None) -> None:
        """Start the server in its own process group with its output in its log, wait until it
        answers (then `ready()`), then until it exits or KeyboardInterrupt; stop the whole group."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("a")  # not a pipe: a server logs a line per request and would block on a full one
        proc = subprocess.Popen(self.cmd, env=self.env, start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 90
            while not _ready(self.ready_url):
                if proc.poll() is not None:
                    err = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
                    raise UiError(f"the {self.name} exited during start-up: {' '.join(err)} (log: {self.log_path})")
                if time.monotonic() > deadline:
                    raise UiError(f"the {self.name} did not answer within 90 s; try again with --debug.")
                time.sleep(0.2)
            ready()
            proc.wait()
        finally:
            stop(proc)
            log.close()


def port_free(host: str, port: int) -> bool:
    """Whether a server can listen on `port` at `host` (an IPv6 address when it has a colon, as the
    servers bind it); `UiError` when `host` is no address this machine has."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # like the server: TIME_WAIT is no listener
        try:
            s.bind((host, port))
            s.listen()
        except (socket.gaierror, UnicodeError):
            raise UiError(f"--host {host} is not an address this machine can resolve: use 127.0.0.1 (the "
                          "default), ::1, localhost, 0.0.0.0 or one of this machine's addresses.") from None
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return False
            raise UiError(f"cannot listen on {host} port {port} ({e.strerror}): use 127.0.0.1 (the default), "
                          "::1, localhost, 0.0.0.0 or one of this machine's addresses.") from None
    return True


def http_base(host: str, port: int) -> str:
    """`http://host:port`, an IPv6 address in brackets as URLs need it."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the server's process group (twice if needed, MLflow can ignore the first), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # workers left after the leader exited
        os.killpg(proc.pid, signal.SIGKILL)


def _mlflow_ui(overrides: Sequence[str] | None, host: str, port: int) -> Server:
    """The MLflow UI on the project's SQLite store (created and migrated here if new)."""
    from ttt_lab.tracking.store import open_store

    cfg = load_config(overrides).cfg
    if not cfg.tracking.uri.startswith("sqlite:///"):
        raise UiError(f"tracking.uri is {cfg.tracking.uri}: that server has its own UI; open it in a browser.")
    open_store(cfg.tracking.uri, cfg.tracking.artifacts)
    artifacts = Path(cfg.tracking.artifacts).resolve()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", cfg.tracking.uri,
           "--default-artifact-root", artifacts.as_uri(), "--host", host, "--port", str(port), "--workers", "1"]
    url = http_base(host, port)
    return Server("MLflow UI", cmd, os.environ | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, url + "/health",
                  url, Path(cfg.home) / "ui" / "mlflow-server.log",
                  f"every run, parameter, metric and artifact of {cfg.tracking.uri}", f"store {cfg.tracking.uri}")


DASHBOARD = ("import os, optuna_dashboard; optuna_dashboard.run_server(os.environ.pop('TTT_LAB_DASHBOARD_STORAGE'), "
             "host=os.environ['TTT_LAB_DASHBOARD_HOST'], port=int(os.environ['TTT_LAB_DASHBOARD_PORT']))")
"""The dashboard gets its storage URL through its environment, not its command line (which any
user of the machine can read with `ps`): a PostgreSQL URL carries a password."""


def _optuna_dashboard(study: str, storage: str | None, overrides: Sequence[str] | None, host: str,
                      port: int) -> Server:
    """optuna-dashboard on the study's storage, opened at the study's page."""
    import importlib.util

    from ttt_lab.redact import redact

    if importlib.util.find_spec("optuna_dashboard") is None:
        raise UiError("`ttt-lab ui --optuna` serves optuna-dashboard, which this installation lacks: "
                      "pip install 'ttt-lab[dashboard]'.")
    from ttt_lab.studies.storage import open_storage, storage_url

    cfg = load_config(overrides).cfg
    url = storage_url(storage, cfg.home)
    opened = open_storage(url)
    names = sorted(s.study_name for s in opened.get_all_studies())
    if study not in names:
        known = ", ".join(names) or "none yet"
        raise UiError(f"no study {study!r} in the Optuna storage {redact(url)} (studies there: {known}). Give the "
                      "name `ttt-lab sweep` printed, or --storage for another storage.")
    env = os.environ | {"TTT_LAB_DASHBOARD_STORAGE": url, "TTT_LAB_DASHBOARD_HOST": host,
                        "TTT_LAB_DASHBOARD_PORT": str(port)}
    base = http_base(host, port)
    page = f"{base}/dashboard/studies/{opened.get_study_id_from_name(study)}"
    return Server("Optuna dashboard", [sys.executable, "-c", DASHBOARD], env, base + "/api/meta", page,
                  Path(cfg.home) / "ui" / "optuna-dashboard.log",
                  f"every study, trial and parameter in {redact(url)}", f"storage {redact(url)}")


def ui_server(overrides: Sequence[str] | None = None, *, host: str = "127.0.0.1", port: int = 5000,
              optuna: str | None = None, storage: str | None = None) -> Server:
    """What `ttt-lab ui` serves: the MLflow UI on the project's SQLite store (created and migrated
    here if new), or with `optuna` (a study's name) optuna-dashboard on that study's storage;
    `UiError` when `port` on `host` is taken already."""
    if not port_free(host, port):
        raise UiError(f"port {port} on {host} is already in use. Stop what uses it or pick another: "
                      f"`ttt-lab ui --port {port + 1}`.")
    if optuna is not None:
        return _optuna_dashboard(optuna, storage, overrides, host, port)
    return _mlflow_ui(overrides, host, port)
