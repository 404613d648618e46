"""Which machine and process namespace a worker runs in. Two containers may share a hostname
but not a PID namespace: a process id means something only where both the boot and the PID
namespace are the same, so liveness by pid is checked only there (elsewhere: heartbeats)."""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return "?"


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "?"


@cache
def host_identity() -> str:
    """`hostname/boot-id/pid-namespace` of this process."""
    boot = _read("/proc/sys/kernel/random/boot_id")[:8] or _read("/etc/machine-id")[:8]
    return f"{socket.gethostname()}/{boot}/{_pid_namespace()}"
