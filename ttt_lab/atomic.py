"""Writes that other processes read (done markers, audits, reports, figures): a unique temp file
beside the target, flushed to disk, then renamed over it. A reader sees the old file or the
new one, never half of one, and two writers never share a temp name.

The temp file is created with `os.open(..., 0o666)`, so the kernel applies the process umask
exactly as it does for a plain `open(path, "w")`: a report written under the usual umask 022 is
0644, readable by a colleague on the same machine (`tempfile.mkstemp` would make it 0600). A
target that exists already keeps its permission bits, as a plain write over it would."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

PLAIN_MODE = 0o666
"""What `open(path, "w")` asks the kernel for; the umask takes its bits away."""


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """An open descriptor on a new, empty file beside the target that no other writer shares
    (`O_EXCL`: a name taken by another writer is never opened twice)."""
    while True:
        tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PLAIN_MODE), tmp
        except FileExistsError:
            continue


def _existing_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def write_bytes(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically, with the mode a plain write would give it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        mode = _existing_mode(path)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically, with the mode a plain write would give it."""
    return write_bytes(path, text.encode("utf-8"))
