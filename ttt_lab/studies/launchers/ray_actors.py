"""`--launcher ray`: the study's workers as detached Ray actors on an existing cluster
(`launcher.address`, else $RAY_ADDRESS, else the cluster `ray start` began on this machine).
Each actor runs the ordinary worker loop against the shared Optuna storage, so Ray, SLURM and
local workers can share one study; an actor declares one trial's resources
(`launcher.cpus_per_trial`, `launcher.gpus_per_trial`). Detached, the actors outlive the command
that started them; `--wait` follows them. A worker that died with its node leaves its trial
RUNNING until the stale-trial rule fails it (its process gone on this host, or its heartbeat
older than the storage's grace period elsewhere) and it is queued again. Ray is an optional
extra (`ttt-lab[ray]`), imported only here."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import uuid
from pathlib import Path

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.launchers import check_shared
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.worker import JobLog, WorkerJob, run_to_end

NAMESPACE = "ttt-lab"
NO_CLUSTER = ("Start one (`ray start --head` on this machine, KubeRay on Kubernetes) and pass its address as "
              "launcher.address=HOST:6379 or $RAY_ADDRESS.")


def connect(la: LauncherConfig) -> None:
    """Attach this process to the cluster (once), or one paragraph saying why it cannot."""
    try:
        import ray
    except ImportError:
        raise StudyError("--launcher ray needs Ray, which this installation lacks: pip install 'ttt-lab[ray]' "
                         "(the same version as the cluster's).") from None
    if ray.is_initialized():
        return
    address = la.address or os.environ.get("RAY_ADDRESS") or "auto"
    if address != "auto" and not _reachable(address):  # ray.init would retry an address nobody answers for minutes
        raise StudyError(f"--launcher ray found no Ray cluster at {address} (nothing answers there). {NO_CLUSTER}")
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING,
                 configure_logging=False)
    except (ConnectionError, RuntimeError) as e:
        raise StudyError(f"--launcher ray found no Ray cluster at {address} ({' '.join(str(e).split())[:200]}). "
                         + NO_CLUSTER) from None


def _reachable(address: str, timeout_s: float = 5.0) -> bool:
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def machines() -> int:
    """The machines the cluster's live nodes run on (several nodes may share one)."""
    import ray

    return len({n.get("NodeManagerAddress") for n in ray.nodes() if n.get("Alive")})


class RayJob:
    """A submitted worker: its id (the actor's name) and whether it has ended (a detached actor
    that exited is gone from the cluster's names)."""

    def __init__(self, name: str) -> None:
        self.job_id = name

    def done(self) -> bool:
        import ray

        try:
            ray.get_actor(self.job_id, namespace=NAMESPACE)
        except ValueError:
            return True
        return False


def _actor_class():
    import ray

    @ray.remote(max_restarts=0)
    class Worker:
        def run(self, job: WorkerJob) -> None:
            try:
                run_to_end(job, JobLog(), threading.Event())
            finally:
                ray.actor.exit_actor()

    return Worker


class RayActors:
    follow_to_exit = False

    def check(self, la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
        """A cluster across several machines needs a storage and a tracking store every node reaches."""
        connect(la)
        n = machines()
        if n > 1:
            check_shared(f"a Ray cluster across {n} machines", storage_url, tracking_uri)

    def threads(self, la: LauncherConfig, workers: int) -> int:
        return max(1, int(la.cpus_per_trial))

    def submit(self, jobs: list[WorkerJob], la: LauncherConfig, folder: Path) -> list[RayJob]:
        connect(la)
        worker = _actor_class()
        out = []
        for j in jobs:
            name = f"{j.spec.name}-{j.index}-{uuid.uuid4().hex[:8]}"
            actor = worker.options(name=name, namespace=NAMESPACE, lifetime="detached", num_cpus=la.cpus_per_trial,
                                   num_gpus=la.gpus_per_trial).remote()
            actor.run.remote(dataclasses.replace(j, job_id=name))
            out.append(RayJob(name))
        return out

    def state(self, la: LauncherConfig, folder: Path, job_id: str) -> str:
        try:
            connect(la)
        except StudyError as e:
            return f"UNKNOWN ({e})"[:120]
        return "ENDED" if RayJob(job_id).done() else "RUNNING"

    def plan(self, la: LauncherConfig, study: str, workers: int) -> str | None:
        return None


LAUNCHER = RayActors()
