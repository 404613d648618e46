"""`ttt-lab sweep --launcher ray`: the study's workers as detached Ray actors on an existing
cluster (`launcher.address`, else $RAY_ADDRESS, else the cluster `ray start` began on this
machine). Each actor runs the ordinary worker loop (`worker.worker_main`) against the shared
Optuna storage, so Ray, SLURM and local workers can share one study; an actor declares one
trial's resources (`launcher.cpus_per_trial`, `launcher.gpus_per_trial`). Detached, the actors
outlive the command that started them; `--wait` follows them. A worker that died with its node
leaves its trial RUNNING until the stale-trial rule fails it (its process gone on this host, or
its heartbeat older than the storage's grace period elsewhere) and it is queued again. Ray is an
optional extra (`ttt-lab[ray]`), imported only here."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import uuid

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.spec import StudyError
from ttt_lab.studies.worker import WorkerJob

NAMESPACE = "ttt-lab"


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
        raise StudyError(f"--launcher ray found no Ray cluster at {address} (nothing answers there). Start one "
                         "(`ray start --head` on this machine, KubeRay on Kubernetes) and pass its address as "
                         "launcher.address=HOST:6379 or $RAY_ADDRESS.")
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING,
                 configure_logging=False)
    except (ConnectionError, RuntimeError) as e:
        raise StudyError(f"--launcher ray found no Ray cluster at {address} ({' '.join(str(e).split())[:200]}). "
                         "Start one (`ray start --head` on this machine, KubeRay on Kubernetes) and pass its address "
                         "as launcher.address=HOST:6379 or $RAY_ADDRESS.") from None


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
    """A submitted worker as `launcher.follow` sees a job: its id (the actor's name) and whether
    it has ended (a detached actor that exited is gone from the cluster's names)."""

    def __init__(self, name: str) -> None:
        self.job_id = name

    def done(self) -> bool:
        import ray

        try:
            ray.get_actor(self.job_id, namespace=NAMESPACE)
        except ValueError:
            return True
        return False


class _Printer:
    """What a worker reports, printed to the actor's log."""

    def put(self, event) -> None:
        kind, _, payload = event
        if kind == "start":
            print(f"trial {payload[0]} started", flush=True)
        elif kind == "end":
            print(f"trial {payload.number} {payload.state} in {payload.seconds:.1f} s", flush=True)


def run_worker(job: WorkerJob) -> None:
    """The actor's work: the worker loop until the study has nothing left, then the parent run
    closed if this was the last trial."""
    from ttt_lab.studies.array_worker import close_if_done
    from ttt_lab.studies.worker import worker_main

    worker_main(job, _Printer(), threading.Event())
    close_if_done(job)


def _actor_class():
    import ray

    @ray.remote(max_restarts=0)
    class Worker:
        def run(self, job: WorkerJob) -> None:
            try:
                run_worker(job)
            finally:
                ray.actor.exit_actor()

    return Worker


def submit(jobs: list[WorkerJob], la: LauncherConfig) -> list[RayJob]:
    connect(la)
    worker = _actor_class()
    out = []
    for j in jobs:
        name = f"{j.spec.name}-{j.index}-{uuid.uuid4().hex[:8]}"
        job = dataclasses.replace(j, job_id=name, threads=max(1, int(la.cpus_per_trial)))
        actor = worker.options(name=name, namespace=NAMESPACE, lifetime="detached", num_cpus=la.cpus_per_trial,
                               num_gpus=la.gpus_per_trial).remote()
        actor.run.remote(job)
        out.append(RayJob(name))
    return out


def check(la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
    """A cluster across several machines needs a storage and a tracking store every node reaches."""
    connect(la)
    n = machines()
    if n <= 1:
        return
    if storage_url.startswith("sqlite"):
        raise StudyError(f"the Ray cluster spans {n} machines and the Optuna storage {storage_url.split('?')[0]} is "
                         "a SQLite file on this one. Pass --storage postgresql://user:password@host:5432/db or "
                         "--storage journal:///shared/path/study.log (a file system every node mounts).")
    if not tracking_uri.startswith(("http://", "https://", "postgresql", "mysql")):
        raise StudyError(f"the Ray cluster spans {n} machines and tracking.uri={tracking_uri} is a local file: start "
                         "an MLflow server and pass tracking.uri=http://HOST:5000.")
