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
        with urllib.request.urlopen(url + "/health", timeout=1) as r:
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


def serve(overrides: list[str], host: str, port: int, console: Console) -> None:
    # Ctrl-C and SIGTERM stop the server, even when started from a background job that ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    cfg = load(overrides).cfg
    if not cfg.tracking.uri.startswith("sqlite:///"):
        raise UiError(f"tracking.uri is {cfg.tracking.uri}: that server has its own UI; open it in a browser.")
    if not port_free(host, port):
        raise UiError(f"port {port} on {host} is already in use. Stop what uses it or pick another: "
                      f"`ttt-lab ui --port {port + 1}`.")
    from ttt_lab.tracking.store import open_store

    open_store(cfg.tracking.uri, cfg.tracking.artifacts)  # creates and migrates the store if new
    artifacts = Path(cfg.tracking.artifacts).resolve()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", cfg.tracking.uri,
           "--default-artifact-root", artifacts.as_uri(), "--host", host, "--port", str(port), "--workers", "1"]
    env = os.environ | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    url = f"http://{host}:{port}"
    if host not in LOOPBACK:
        console.print(f"[yellow]warning:[/] --host {host} serves every run, parameter, metric and artifact of "
                      f"{cfg.tracking.uri} to anyone who can reach this machine on port {port}, with no login. "
                      "Use --host 127.0.0.1 (the default) and an SSH tunnel unless that is what you want.",
                      highlight=False)
    console.print(f"starting the MLflow UI at [bold]{url}[/] (store {cfg.tracking.uri})...", highlight=False)
    log_path = Path(cfg.home) / "ui" / "mlflow-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("a")  # not a pipe: the server logs a line per request and would block on a full one
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not _ready(url):
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise UiError(f"the MLflow server exited during start-up: {' '.join(err)} (log: {log_path})")
            if time.monotonic() > deadline:
                raise UiError("the MLflow server did not answer within 90 s; try again with --debug.")
            time.sleep(0.2)
        console.print(f"MLflow UI ready at [bold]{url}[/]; Ctrl-C to stop (server log: {log_path}).", highlight=False)
        proc.wait()
    except KeyboardInterrupt:
        console.print("stopping the MLflow UI...")
    finally:
        stop(proc)
        log.close()
