"""Where a sweep's workers run with `--launcher NAME`: one module per backend, each exposing a
`LAUNCHER` that follows the `Launcher` protocol, found by name in this registry the way Optuna
names its samplers. Each worker runs the ordinary worker loop (`studies.worker`) against the
shared Optuna storage, so what a backend adds is only how its workers start, what it refuses
first, and how its jobs are seen. Nothing outside this package compares a launcher's name.

Adding a backend: a module here with its `LAUNCHER`, and one line in `BUILT_IN`; a test (or a
plugin) registers one at run time with `register(name, launcher)`."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ttt_lab.studies.spec import StudyError

if TYPE_CHECKING:
    from ttt_lab.config.schema import LauncherConfig
    from ttt_lab.studies.worker import WorkerJob

BUILT_IN = {
    "slurm": "slurm",  # a SLURM job array through submitit
    "local": "local",  # the same array on submitit's local executor: real processes on this machine
    "ray": "ray_actors",  # detached actors on a Ray cluster
}
"""Launcher name (`--launcher`, `launcher.cluster`) -> its module in this package, imported when used."""

_registered: dict[str, Launcher] = {}


class Job(Protocol):
    """A submitted worker: the scheduler's id for it, and whether it has ended."""

    @property
    def job_id(self) -> str: ...

    def done(self) -> bool: ...


class Launcher(Protocol):
    """What `ttt-lab sweep --launcher NAME` needs of a backend."""

    follow_to_exit: bool
    """`--wait` returns only once the jobs themselves ended (not only their trials)."""

    def check(self, la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
        """Raise `StudyError` for what cannot work, before anything is created or submitted."""

    def threads(self, la: LauncherConfig, workers: int) -> int:
        """Torch threads of each of `workers` workers."""

    def submit(self, jobs: list[WorkerJob], la: LauncherConfig, folder: Path) -> list[Job]:
        """Start one worker per job (`folder`: the launch's files, on storage every node sees)."""

    def state(self, la: LauncherConfig, folder: Path, job_id: str) -> str:
        """A job's state as its scheduler sees it, for `--status` (never raises)."""

    def plan(self, la: LauncherConfig, study: str, workers: int) -> str | None:
        """What a dry run shows of the launch (a job array's sbatch script), or None."""


def register(name: str, launcher: Launcher) -> None:
    """Make `launcher` the backend of `--launcher name` (and `launcher.cluster=name`)."""
    _registered[name] = launcher


def names() -> list[str]:
    return list(dict.fromkeys([*BUILT_IN, *_registered]))


def get(name: str) -> Launcher:
    """The backend registered as `name`, or one paragraph naming those there are."""
    if name in _registered:
        return _registered[name]
    if name not in BUILT_IN:
        raise StudyError(f"launcher {name!r} is not one of {', '.join(names())} (without --launcher the workers run "
                         "on this machine).")
    launcher: Launcher = importlib.import_module(f"{__name__}.{BUILT_IN[name]}").LAUNCHER
    return launcher


def folder_of(la: LauncherConfig, study: str) -> Path:
    """The launch's files (job list, scripts, job logs) of one study, under `launcher.log_dir`."""
    return Path(la.log_dir).resolve() / study


def check_shared(who: str, storage_url: str, tracking_uri: str, instead: str = "") -> None:
    """Workers on other machines (`who` runs them) need an Optuna storage and a tracking store
    every node reaches; `instead`, what else to try."""
    if storage_url.startswith("sqlite"):
        raise StudyError(f"{who} needs an Optuna storage every node reaches: {storage_url.split('?')[0]} is a SQLite "
                         "file, which workers on other nodes cannot share (file locks over network file systems are "
                         "unreliable). Pass --storage postgresql://user:password@host:5432/db, or --storage "
                         "journal:///shared/path/study.log (a file on a file system every node mounts, no database "
                         f"server), or set $TTT_LAB_OPTUNA_STORAGE{instead}.")
    if not tracking_uri.startswith(("http://", "https://", "postgresql", "mysql")):
        raise StudyError(f"{who} needs a tracking store every node reaches; tracking.uri={tracking_uri} is a local "
                         "file. Start an MLflow server (`mlflow server --backend-store-uri postgresql://…`) and pass "
                         f"tracking.uri=http://HOST:5000{instead}.")
