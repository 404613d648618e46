"""A process that imports what the CLI's commands import (torch, transformers, TRL, MLflow, Optuna,
Hydra, ~8 s on 2 cores) once, then forks one child per `ttt-lab` call of the tests.

Each child is a fresh process as far as the command can tell: its own pid, argv, environment,
working directory, stdin (/dev/null), stdout and stderr (files the test named), exit status;
nothing has run in this process but imports, so no thread pool, Hydra state or store exists to
inherit. Environment variables that the imports set with `setdefault` (the quiet settings of
ttt_lab's modules) are set again in a child whose environment lacks them, as a fresh import would.

Protocol, one request per connection on a Unix socket: the client sends one JSON line
{"argv", "env", "cwd", "new_session"} with three file descriptors (the child's stdin, stdout,
stderr); the server answers {"pid"} at once and {"returncode"}
(negative: killed by that signal, as `subprocess` says it) when the child ends.
`TTT_LAB_TEST_FORK=0` makes the tests start every call as a new process instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

PRELOAD = (
    "hydra", "omegaconf", "torch", "transformers", "trl", "peft", "mlflow", "optuna", "scipy.stats", "matplotlib",
    "jinja2", "transformers.models.llama.modeling_llama", "ttt_lab.tracking.store", "ttt_lab.train.trainer",
    "ttt_lab.engine.kv_backend", "ttt_lab.train.callbacks", "ttt_lab.studies.pool", "ttt_lab.studies.parent_run",
    "ttt_lab.studies.recovery", "ttt_lab.studies.enqueue", "ttt_lab.studies.sampling", "ttt_lab.studies.tables",
)
STARTED_WITH_PYTHONPATH = os.environ.get("PYTHONPATH", "")


def _preload() -> dict[str, str]:
    """Import PRELOAD; the environment variables the imports added."""
    import importlib

    before = dict(os.environ)
    for name in PRELOAD:
        importlib.import_module(name)
    return {k: v for k, v in os.environ.items() if k not in before}


def _child(conn: socket.socket, req: dict, fds: list[int], added: dict[str, str]) -> None:
    """Become the command: never returns."""
    code = 1
    try:
        if req.get("new_session"):
            os.setsid()
        os.environ.clear()
        os.environ.update(req["env"])
        for k, v in added.items():
            os.environ.setdefault(k, v)
        os.chdir(req["cwd"])
        _python_path(req["env"].get("PYTHONPATH", ""))
        for fd, given in zip((0, 1, 2), fds, strict=True):
            os.dup2(given, fd)
        for given in set(fds):
            if given > 2:
                os.close(given)
        conn.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.argv = ["ttt-lab", *req["argv"]]
        from ttt_lab.cli import app

        try:
            app(prog_name="ttt-lab")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: a JSON line, sent with the child's stdin, stdout and stderr."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            raise ConnectionError("request cut short")
        data += more
    return json.loads(data), list(fds)


def _python_path(wanted: str) -> None:
    """sys.path as a new interpreter would build it from the child's PYTHONPATH."""
    for entry in STARTED_WITH_PYTHONPATH.split(os.pathsep):
        if entry and entry in sys.path:
            sys.path.remove(entry)
    sys.path[1:1] = [os.path.abspath(e) for e in wanted.split(os.pathsep) if e]


def _status(raw: int) -> int:
    return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)


def serve(path: str) -> None:
    added = _preload()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    print("ready", flush=True)
    waiting: dict[int, socket.socket] = {}
    parent = os.getppid()
    while os.getppid() == parent:
        readable, _, _ = select.select([server], [], [], 0.02)
        if readable:
            conn, _ = server.accept()
            req, fds = _receive(conn)
            pid = os.fork()
            if pid == 0:
                server.close()
                for c in waiting.values():
                    c.close()
                _child(conn, req, fds, added)
            for fd in fds:
                os.close(fd)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            waiting[pid] = conn
        while waiting:
            pid, raw = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"returncode": _status(raw)}).encode() + b"\n")
                conn.close()


if __name__ == "__main__":
    sys.path[0] = os.path.dirname(sys.executable)  # as for the console script, not this tests/ folder
    serve(sys.argv[1])
