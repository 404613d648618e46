"""A launch up to its submission: what is refused before anything is created, the job array's
SLURM parameters and sbatch script, and the submitit executor (SLURM or local) that submits it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import submitit

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.spec import StudyError


def check_launch(la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
    """Refuse, before anything is created or submitted, what cannot work on a cluster."""
    if la.cluster == "ray":
        from ttt_lab.studies import ray_launcher

        ray_launcher.check(la, storage_url, tracking_uri)
        return
    if la.cluster != "slurm":
        return
    if storage_url.startswith("sqlite"):
        raise StudyError(f"--launcher slurm needs an Optuna storage every node reaches: {storage_url.split('?')[0]} "
                         "is a SQLite file, which workers on other nodes cannot share (file locks over network file "
                         "systems are unreliable). Pass --storage postgresql://user:password@host:5432/db, or "
                         "--storage journal:///shared/path/study.log (a file on a file system every node mounts, no "
                         "database server), or set $TTT_LAB_OPTUNA_STORAGE; or try the launch on this machine with "
                         "launcher.cluster=local.")
    if not tracking_uri.startswith(("http://", "https://", "postgresql", "mysql")):
        raise StudyError(f"--launcher slurm needs a tracking store every node reaches; tracking.uri={tracking_uri} "
                         "is a local file. Start an MLflow server (`mlflow server --backend-store-uri postgresql://…`) "
                         "and pass tracking.uri=http://HOST:5000, or try the launch here with launcher.cluster=local.")
    if shutil.which("sbatch") is None or shutil.which("srun") is None:
        raise StudyError("--launcher slurm found no `sbatch`/`srun` on this machine: run the sweep from a SLURM login "
                         "node, or try the launch on this machine with launcher.cluster=local.")


def folder_of(la: LauncherConfig, study: str) -> Path:
    return Path(la.log_dir).resolve() / study


def slurm_parameters(la: LauncherConfig, study: str, workers: int) -> dict:
    """submitit's SlurmExecutor parameters for the schema's `launcher.*`."""
    params: dict = {"job_name": f"ttt-lab-{study}", "time": la.time_min, "cpus_per_task": la.cpus_per_worker,
                    "array_parallelism": la.max_parallel or workers, "setup": list(la.setup),
                    "additional_parameters": {k.replace("_", "-"): v for k, v in la.sbatch.items()}}
    if la.partition:
        params["partition"] = la.partition
    if la.gpus_per_worker:
        params["gpus_per_node"] = la.gpus_per_worker
    if la.mem_gb:
        params["mem"] = f"{int(la.mem_gb)}GB" if la.mem_gb == int(la.mem_gb) else f"{int(la.mem_gb * 1024)}MB"
    return params


def sbatch_script(la: LauncherConfig, study: str, workers: int) -> str:
    """The sbatch file submitit writes for the array (its own template, the same call)."""
    from submitit.slurm.slurm import _make_sbatch_string

    folder = folder_of(la, study) / "%j"
    command = f"{sys.executable} -u -m submitit.core._submit {folder}"
    return _make_sbatch_string(command=command, folder=folder, map_count=workers,
                               **slurm_parameters(la, study, workers))


def executor(la: LauncherConfig, study: str, workers: int):
    folder = folder_of(la, study) / "%j"
    if la.cluster == "local":
        local = submitit.LocalExecutor(folder, max_num_timeout=la.max_requeues)
        local.update_parameters(timeout_min=la.time_min, setup=list(la.setup))
        return local
    slurm = submitit.SlurmExecutor(folder, max_num_timeout=la.max_requeues)
    slurm.update_parameters(**slurm_parameters(la, study, workers))
    return slurm
