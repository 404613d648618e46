"""What a run needs to be reproduced: commit, dirty flag, command line, package versions."""

from __future__ import annotations

import platform
import shlex
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

from ttt_lab.tracking import keys

PACKAGES = ("ttt-lab", "torch", "transformers", "trl", "mlflow", "optuna", "hydra-core")
REPO = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def has_commit(commit: str) -> bool:
    """Whether this repository holds `commit`."""
    return _git("cat-file", "-e", f"{commit}^{{commit}}") is not None


@cache
def git_state() -> tuple[str, bool]:
    """(commit or 'unknown', dirty)."""
    commit = _git("rev-parse", "HEAD") or "unknown"
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, bool(status)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def command_line() -> str:
    """This process's command line, passwords hidden."""
    from ttt_lab.redact import redact

    prog = Path(sys.argv[0]).name if sys.argv else "ttt-lab"
    return redact(shlex.join([prog, *sys.argv[1:]]))


def tags(config_hash: str, seed: int, command: str | None = None) -> dict[str, str]:
    commit, dirty = git_state()
    out = {
        keys.CONFIG_HASH: config_hash,
        keys.SEED: str(seed),
        keys.COMMAND: command or command_line(),
        keys.GIT_COMMIT: commit,
        keys.GIT_DIRTY: str(dirty).lower(),
    }
    out.update({f"{keys.VERSION_PREFIX}{k}": v for k, v in versions().items()})
    return out
