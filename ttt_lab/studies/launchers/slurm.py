"""`--launcher slurm`: the study's workers as a SLURM job array through submitit, one array task
per worker (`submitit_array`). What is refused before anything is submitted, the array's sbatch
settings and script, and what the scheduler says of a job."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import submitit

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.launchers import check_shared, folder_of
from ttt_lab.studies.launchers.submitit_array import SubmititArray
from ttt_lab.studies.spec import StudyError

TRY_HERE = "; or try the launch on this machine with launcher.cluster=local"


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
    """The sbatch file submitit writes for the array: its own template, the same call (submitit
    has no public way to render it; pyproject.toml bounds the release)."""
    from submitit.slurm.slurm import _make_sbatch_string

    folder = folder_of(la, study) / "%j"
    command = f"{sys.executable} -u -m submitit.core._submit {folder}"
    return _make_sbatch_string(command=command, folder=folder, map_count=workers,
                               **slurm_parameters(la, study, workers))


class SlurmArray(SubmititArray):
    def check(self, la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
        """A storage and a store every node reaches, and sbatch/srun on this machine."""
        check_shared("--launcher slurm", storage_url, tracking_uri, TRY_HERE)
        if shutil.which("sbatch") is None or shutil.which("srun") is None:
            raise StudyError("--launcher slurm found no `sbatch`/`srun` on this machine: run the sweep from a SLURM "
                             "login node, or try the launch on this machine with launcher.cluster=local.")

    def threads(self, la: LauncherConfig, workers: int) -> int:
        return la.cpus_per_worker

    def executor(self, la: LauncherConfig, study: str, workers: int, folder: Path) -> submitit.Executor:
        slurm = submitit.SlurmExecutor(folder, max_num_timeout=la.max_requeues)
        slurm.update_parameters(**slurm_parameters(la, study, workers))
        return slurm

    def state(self, la: LauncherConfig, folder: Path, job_id: str) -> str:
        if shutil.which("sacct") is None:
            return "UNKNOWN (no sacct on this machine)"
        try:
            return submitit.SlurmJob(folder=folder / "%j", job_id=job_id).state
        except Exception as e:  # the scheduler's accounting may be unreachable; the trials table still shows
            return f"UNKNOWN ({type(e).__name__})"

    def plan(self, la: LauncherConfig, study: str, workers: int) -> str | None:
        return "the job array's sbatch script:\n" + sbatch_script(la, study, workers)


LAUNCHER = SlurmArray()
