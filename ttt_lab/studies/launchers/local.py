"""`--launcher local` (or `--launcher slurm launcher.cluster=local`): the SLURM backend's job
array on submitit's local executor, real processes on this machine with the same task code and
requeue path, for trying a launch before a cluster."""

from __future__ import annotations

import os
from pathlib import Path

import submitit

from ttt_lab.config.schema import LauncherConfig
from ttt_lab.studies.launchers.submitit_array import SubmititArray


class LocalArray(SubmititArray):
    follow_to_exit = True
    """The workers leave once no trial is left: `--wait` returns after them."""
    requeue_by_exit = True

    def check(self, la: LauncherConfig, storage_url: str, tracking_uri: str) -> None:
        """Every worker is on this machine: any storage and store will do."""

    def threads(self, la: LauncherConfig, workers: int) -> int:
        return max(1, (os.cpu_count() or 1) // workers)

    def executor(self, la: LauncherConfig, study: str, workers: int, folder: Path) -> submitit.Executor:
        local = submitit.LocalExecutor(folder, max_num_timeout=la.max_requeues)
        local.update_parameters(timeout_min=la.time_min, setup=list(la.setup))
        return local

    def state(self, la: LauncherConfig, folder: Path, job_id: str) -> str:
        """Whether the job's controller process lives; a job that ended wrote its result."""
        from ttt_lab.studies.recovery import pid_alive

        if pid_alive(int(job_id)):
            return "RUNNING"
        return "FINISHED" if any((folder / job_id).glob("*_result.pkl")) else "ENDED"


LAUNCHER = LocalArray()
