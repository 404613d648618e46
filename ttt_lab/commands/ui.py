"""`ttt-lab ui`: the MLflow UI on the project's store, started and stopped cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request

from rich.console import Console

from ttt_lab import api
from ttt_lab.api import UiError


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


def _run_server(server: api.Server, console: Console) -> None:
    """Start the server in its own process group with its output in its log, wait until it
    answers, then until Ctrl-C; stop the whole group."""
    name, url, log_path = server.name, server.url, server.log_path
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("a")  # not a pipe: a server logs a line per request and would block on a full one
    proc = subprocess.Popen(server.cmd, env=server.env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 90
        while not _ready(server.ready_url):
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


def serve(overrides: list[str], host: str, port: int, console: Console, optuna: str | None = None,
          storage: str | None = None) -> None:
    """The MLflow UI on the project's store, or (`optuna`: a study's name) optuna-dashboard on its storage."""
    server = api.ui_server(overrides, host=host, port=port, optuna=optuna, storage=storage)
    _prepare(host, port, console, server.serves)
    console.print(f"starting the {server.name} at [bold]{server.url}[/] ({server.source})...", highlight=False)
    _run_server(server, console)
