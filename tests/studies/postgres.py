"""A real PostgreSQL server for tests: its own cluster in a temporary folder on 127.0.0.1."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import free_port

USER, PASSWORD, DB = "ttt", "s3cret", "optuna"


def binaries() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


def _as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the `postgres` system user then."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def server() -> Iterator[str]:
    """Yields a postgresql:// URL with a password; the cluster is removed afterwards."""
    bindir = binaries()
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="ttt-pg-", dir="/tmp"))
    os.chmod(root, 0o755)
    data, pwfile = root / "data", root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(pwfile, "postgres")
    port = free_port()
    run = lambda *c: subprocess.run(_as_server_user([str(bindir / c[0]), *c[1:]]), check=True,  # noqa: E731
                                    capture_output=True, text=True)
    try:
        run("initdb", "-D", str(data), "-U", USER, f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8")
        run("pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-o",
            f"-p {port} -c listen_addresses=127.0.0.1 -k {root}", "start")
        env = dict(os.environ, PGPASSWORD=PASSWORD)
        subprocess.run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, DB], env=env,
                       check=True, capture_output=True)
        yield f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DB}"
    finally:
        subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
