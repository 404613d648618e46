"""A real single-node SLURM cluster in a temporary folder (Debian's slurmctld, slurmd and munge,
as root): what `ttt-lab sweep --launcher slurm` submits to in the slow tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.conftest import free_port

DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "srun")


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    absent = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]
    if absent:
        return (f"no {', '.join(absent)}: install Debian's slurmctld slurmd slurm-client munge "
                "(apt-get install -y slurmctld slurmd slurm-client munge)")
    if os.geteuid() != 0:
        return "a test SLURM cluster runs its daemons as root"
    return None


def _conf(root: Path, host: str) -> str:
    return "\n".join([
        "ClusterName=tttlab", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge.socket", f"StateSaveLocation={root}/state", f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "ReturnToService=2", "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        f"SlurmctldLogFile={root}/slurmctld.log", f"SlurmdLogFile={root}/slurmd.log",
        f"NodeName={host} CPUs={os.cpu_count() or 2} RealMemory=2000 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""])


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@contextmanager
def cluster() -> Iterator[dict[str, str]]:
    """Yields the environment (SLURM_CONF) under which sbatch, srun and squeue reach it."""
    root = Path(tempfile.mkdtemp(prefix="ttt-slurm-", dir="/tmp"))
    for d in ("state", "spool"):
        (root / d).mkdir()
    (root / "munge.key").write_bytes(os.urandom(1024))
    os.chmod(root / "munge.key", 0o400)
    (root / "slurm.conf").write_text(_conf(root, socket.gethostname().split(".")[0]))
    env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))
    try:
        subprocess.run([_sbin("munged"), "--force", f"--key-file={root}/munge.key", f"--socket={root}/munge.socket",
                        f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
                        f"--seed-file={root}/munge.seed"], check=True, capture_output=True)
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([_sbin(daemon), "-f", str(root / "slurm.conf")], check=True, capture_output=True, env=env)
        deadline = time.monotonic() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                                           env=env).stdout:
            assert time.monotonic() < deadline, (root / "slurmctld.log").read_text()[-2000:]
            time.sleep(0.5)
        yield env
    finally:
        subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True, env=env)
        deadline = time.monotonic() + 20  # let slurmd end the jobs' steps before it goes
        while time.monotonic() < deadline and subprocess.run(["squeue", "-h"], capture_output=True, text=True,
                                                             env=env).stdout.strip():
            time.sleep(0.5)
        for pid_file in ("slurmd.pid", "slurmctld.pid", "munged.pid"):
            with suppress(OSError, ValueError):
                os.kill(int((root / pid_file).read_text()), signal.SIGTERM)
        shutil.rmtree(root, ignore_errors=True)
