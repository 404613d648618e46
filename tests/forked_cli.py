"""`ttt-lab` calls of the tests, run in processes forked from `cli_zygote` (one per test process,
started on first use) instead of paying the heavy imports in every call. `run` is
`subprocess.run(..., capture_output=True, text=True)`, `popen` the part of `subprocess.Popen`
the tests use."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

_ZYGOTE: dict[str, Any] = {}
PIPE, STDOUT = subprocess.PIPE, subprocess.STDOUT


def enabled() -> bool:
    return os.environ.get("TTT_LAB_TEST_FORK", "1") != "0"


def _socket_path() -> str:
    if "path" not in _ZYGOTE:
        path = os.path.join(tempfile.mkdtemp(prefix="ttt-zygote-"), "s")
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("cli_zygote.py")), path],
                                stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the CLI zygote did not start (exit {proc.wait()})")
        atexit.register(proc.kill)
        _ZYGOTE.update(path=path, proc=proc)
    return _ZYGOTE["path"]


class ForkedPopen:
    """A `ttt-lab` process forked from the zygote."""

    def __init__(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
                 stdout: int | IO | None = None, stderr: int | IO | None = None, start_new_session: bool = False,
                 text: bool = True) -> None:
        self.args, self.returncode = ["ttt-lab", *argv], None
        self.stdout = self.stderr = None
        theirs: list[int] = []
        out_fd = self._target(stdout, "stdout", theirs)
        err_fd = out_fd if stderr == STDOUT else self._target(stderr, "stderr", theirs)
        null = os.open(os.devnull, os.O_RDONLY)
        req = {"argv": list(argv), "env": dict(os.environ if env is None else env),
               "cwd": str(cwd or os.getcwd()), "new_session": start_new_session}
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(_socket_path())
        socket.send_fds(self._sock, [json.dumps(req).encode() + b"\n"], [null, out_fd, err_fd])
        for fd in (null, *theirs):
            os.close(fd)
        self._reader = self._sock.makefile()
        self.pid = json.loads(self._reader.readline())["pid"]
        self._done = threading.Event()
        threading.Thread(target=self._await_exit, daemon=True).start()

    def _target(self, where: int | IO | None, name: str, theirs: list[int]) -> int:
        if where == PIPE:
            r, w = os.pipe()
            setattr(self, name, os.fdopen(r, "r"))
            theirs.append(w)
            return w
        if where is None:
            return sys.__stdout__.fileno() if name == "stdout" else sys.__stderr__.fileno()
        if where == subprocess.DEVNULL:
            null = os.open(os.devnull, os.O_WRONLY)
            theirs.append(null)
            return null
        return where if isinstance(where, int) else where.fileno()

    def _await_exit(self) -> None:
        line = self._reader.readline()
        self.returncode = json.loads(line)["returncode"] if line else -signal.SIGKILL
        self._sock.close()
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        results: dict[str, str] = {}
        readers = [threading.Thread(target=lambda n=n, f=f: results.__setitem__(n, f.read()), daemon=True)
                   for n, f in (("out", self.stdout), ("err", self.stderr)) if f is not None]
        for t in readers:
            t.start()
        self.wait(timeout)
        for t in readers:
            t.join(timeout)
        return results.get("out"), results.get("err")

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def popen(argv: list[str], **kw: Any) -> ForkedPopen | subprocess.Popen:
    """`subprocess.Popen([ttt-lab, *argv], text=True, **kw)`, forked when enabled."""
    if enabled():
        return ForkedPopen(argv, **kw)
    return subprocess.Popen([str(Path(sys.executable).parent / "ttt-lab"), *argv], text=True, **kw)


def run(argv: list[str], *, timeout: float, **kw: Any) -> subprocess.CompletedProcess:
    """`subprocess.run([ttt-lab, *argv], capture_output=True, text=True, timeout=...)`."""
    proc = popen(argv, stdout=PIPE, stderr=PIPE, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return subprocess.CompletedProcess(proc.args, proc.wait(), out, err)
