"""The schema's `launcher:` section: where `ttt-lab sweep --launcher slurm` starts its workers
(part of `config.schema`, kept apart to stay readable)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.env.settings import check_integer, check_number
from ttt_lab.errors import InvalidSetting


@dataclass
class LauncherConfig:
    """Where `ttt-lab sweep --launcher slurm` starts its workers: a SLURM job array through
    submitit, one array task per worker, each running the worker loop against the shared
    storage and tracking server. Not part of any trial's identity (excluded from the hash)."""

    cluster: str = "slurm"
    """The launcher (`--launcher NAME` sets it): slurm: sbatch on this cluster; local: submitit's
    local executor (real processes on this machine, the same worker code and requeue path: for
    trying a launch before a cluster); ray: detached actors on a Ray cluster. The names are those
    `ttt_lab.studies.launchers` registers; it refuses others when a launch starts."""
    workers: int = 0
    """Array size: workers started at once (0: --workers, or the study file's workers)."""
    partition: str = ""
    time_min: int = 60
    """SLURM time limit of each worker, minutes; a worker stopped by it (or preempted) fails its
    trial, queues it again and is requeued."""
    cpus_per_worker: int = 2
    gpus_per_worker: int = 0
    mem_gb: float = 0.0
    """Memory per worker (0: the partition's default)."""
    max_parallel: int = 0
    """Array tasks running at once (0: all of them)."""
    max_requeues: int = 3
    """How often one worker is requeued after a time limit or preemption."""
    sbatch: dict[str, str] = field(default_factory=dict)
    """Extra sbatch settings, e.g. `+launcher.sbatch.account=lab +launcher.sbatch.qos=high` (any
    `#SBATCH --key=value`)."""
    setup: list[str] = field(default_factory=list)
    """Shell lines run before the worker starts (module load …, source venv/bin/activate)."""
    log_dir: str = "${home}/launcher"
    """submitit's job folder (scripts, pickles, logs), one sub-folder per study; must be on a
    file system every node sees."""
    poll_s: float = 5.0
    """How often `--wait` looks at the study and the jobs."""
    address: str = ""
    """ray: the cluster's address, HOST:6379 (empty: $RAY_ADDRESS, else the cluster started on this
    machine with `ray start`)."""
    cpus_per_trial: float = 1.0
    """ray: CPUs each worker (one trial at a time) reserves on its node; its torch threads."""
    gpus_per_trial: float = 0.0
    """ray: GPUs each worker reserves."""


def validate_launcher(la: LauncherConfig) -> None:
    if not la.cluster:
        raise InvalidSetting("launcher.cluster", la.cluster, "a launcher's name (slurm, local, ray)")
    for name, low in (("workers", 0), ("time_min", 1), ("cpus_per_worker", 1), ("gpus_per_worker", 0),
                      ("max_parallel", 0), ("max_requeues", 0)):
        check_integer(f"launcher.{name}", getattr(la, name), low)
    check_number("launcher.mem_gb", la.mem_gb, 0.0)
    check_number("launcher.poll_s", la.poll_s, 0.1)
    check_number("launcher.cpus_per_trial", la.cpus_per_trial, 0.0)
    check_number("launcher.gpus_per_trial", la.gpus_per_trial, 0.0)
