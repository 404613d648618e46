"""`ttt-lab ui`: the MLflow UI on the project's store, started and stopped cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rich.console import Console

from ttt_lab.config.load import load
from ttt_lab.errors import TttLabError


class UiError(TttLabError):
    pass


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # like the server: TIME_WAIT is no listener
        try:
            s.bind((host, port))
            s.listen()
        except OSError:
            return False
    return True


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def stop(proc: subprocess.Popen) -> None:
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


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _prepare(host: str, port: int, console: Console, what: str) -> None:
    # Ctrl-C and SIGTERM stop the server, even when started from a background job that ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    if not port_free(host, port):
        raise UiError(f"port {port} on {host} is already in use. Stop what uses it or pick another: "
                      f"`ttt-lab ui --port {port + 1}`.")
    if host not in LOOPBACK:
        console.print(f"[yellow]warning:[/] --host {host} serves {what} to anyone who can reach this machine on "
                      f"port {port}, with no login. Use --host 127.0.0.1 (the default) and an SSH tunnel unless "
                      "that is what you want.", highlight=False)


def _run_server(name: str, cmd: list[str], env: dict[str, str], ready_url: str, url: str, log_path: Path,
                console: Console) -> None:
    """Start `cmd` in its own process group with its output in `log_path`, wait until `ready_url`
    answers, then until Ctrl-C; stop the whole group."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("a")  # not a pipe: a server logs a line per request and would block on a full one
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not _ready(ready_url):
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise UiError(f"the {name} exited during start-up: {' '.join(err)} (log: {log_path})")
            if time.monotonic() > deadline:
                raise UiError(f"the {name} did not answer within 90 s; try again with --debug.")
            time.sleep(0.2)
        console.print(f"{name} ready at [bold]{url}[/]; Ctrl-C to stop (server log: {log_path}).", highlight=False)
        proc.wait()
    except KeyboardInterrupt:
        console.print(f"stopping the {name}...")
    finally:
        stop(proc)
        log.close()


def serve(overrides: list[str], host: str, port: int, console: Console) -> None:
    cfg = load(overrides).cfg
    if not cfg.tracking.uri.startswith("sqlite:///"):
        raise UiError(f"tracking.uri is {cfg.tracking.uri}: that server has its own UI; open it in a browser.")
    _prepare(host, port, console, f"every run, parameter, metric and artifact of {cfg.tracking.uri}")
    from ttt_lab.tracking.store import open_store

    open_store(cfg.tracking.uri, cfg.tracking.artifacts)  # creates and migrates the store if new
    artifacts = Path(cfg.tracking.artifacts).resolve()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", cfg.tracking.uri,
           "--default-artifact-root", artifacts.as_uri(), "--host", host, "--port", str(port), "--workers", "1"]
    url = f"http://{host}:{port}"
    console.print(f"starting the MLflow UI at [bold]{url}[/] (store {cfg.tracking.uri})...", highlight=False)
    _run_server("MLflow UI", cmd, os.environ | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, url + "/health",
                url, Path(cfg.home) / "ui" / "mlflow-server.log", console)


DASHBOARD = ("import os, optuna_dashboard; optuna_dashboard.run_server(os.environ.pop('TTT_LAB_DASHBOARD_STORAGE'), "
             "host=os.environ['TTT_LAB_DASHBOARD_HOST'], port=int(os.environ['TTT_LAB_DASHBOARD_PORT']))")
"""The dashboard gets its storage URL through its environment, not its command line (which any
user of the machine can read with `ps`): a PostgreSQL URL carries a password."""


def serve_optuna(study: str, storage: str | None, overrides: list[str], host: str, port: int,
                 console: Console) -> None:
    """optuna-dashboard on the study's storage, opened at the study's page."""
    import importlib.util

    from ttt_lab.redact import redact

    if importlib.util.find_spec("optuna_dashboard") is None:
        raise UiError("`ttt-lab ui --optuna` serves optuna-dashboard, which this installation lacks: "
                      "pip install 'ttt-lab[dashboard]'.")
    from ttt_lab.studies.storage import open_storage, storage_url

    cfg = load(overrides).cfg
    url = storage_url(storage, cfg.home)
    opened = open_storage(url)
    names = sorted(s.study_name for s in opened.get_all_studies())
    if study not in names:
        known = ", ".join(names) or "none yet"
        raise UiError(f"no study {study!r} in the Optuna storage {redact(url)} (studies there: {known}). Give the "
                      "name `ttt-lab sweep` printed, or --storage for another storage.")
    _prepare(host, port, console, f"every study, trial and parameter in {redact(url)}")
    env = os.environ | {"TTT_LAB_DASHBOARD_STORAGE": url, "TTT_LAB_DASHBOARD_HOST": host,
                        "TTT_LAB_DASHBOARD_PORT": str(port)}
    base = f"http://{host}:{port}"
    page = f"{base}/dashboard/studies/{opened.get_study_id_from_name(study)}"
    console.print(f"starting the Optuna dashboard for {study!r} (storage {redact(url)})...", highlight=False)
    _run_server("Optuna dashboard", [sys.executable, "-c", DASHBOARD], env, base + "/api/meta", page,
                Path(cfg.home) / "ui" / "optuna-dashboard.log", console)
