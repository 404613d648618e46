"""The options of one `ttt-lab sweep`: one frozen object the CLI (or an API caller) builds once
and hands down whole, to the command, the runner and the launcher. Each option is declared here
once, with its flag and its help; the CLI builds its `--flags` from these declarations, so a new
option is one field here and the line of code that reads it. Imports nothing heavy (the CLI
reads it at start-up)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def option(default: Any, flag: str, help: str, **limits: Any) -> Any:
    """A field of `SweepOptions`: its default, its command-line flag and help, and bounds the
    command line checks (`min=`, `max=`)."""
    return field(default=default, metadata={"flag": flag, "help": help, **limits})


@dataclass(frozen=True, kw_only=True)
class SweepOptions:
    dry_run: bool = option(False, "--dry-run", "Print the plan; run nothing.")
    workers: int | None = option(None, "--workers", "Worker processes on this machine.")
    storage: str | None = option(None, "--storage", "Optuna storage URL shared by every machine (default "
                                 "$TTT_LAB_OPTUNA_STORAGE or sqlite under runs/).")
    max_failures: int | None = option(None, "--max-failures", "Stop claiming trials after this many failures.")
    name: str | None = option(None, "--name", "Study name (default: from the file, or a hash of the arguments).")
    trials: int | None = option(None, "--trials", "Number of trials of an Optuna search.")
    trial_timeout: float | None = option(None, "--trial-timeout", "Seconds a trial may run; a worker past it (hung, "
                                         "stopped) is killed, its trial failed and run again by a fresh worker.",
                                         min=1.0)
    launcher: str | None = option(None, "--launcher", "Where the workers run, as jobs: `slurm`: a SLURM job array "
                                  "(submitit), set by launcher.* overrides (launcher.partition=gpu "
                                  "launcher.time_min=120 …); `local`: the same array as processes on this "
                                  "machine; `ray`: detached actors on a Ray cluster (launcher.address, "
                                  "launcher.cpus_per_trial).")
    wait: bool = option(False, "--wait", "With --launcher: follow the jobs until they end.")
    until_settled: bool = option(False, "--until-settled", "Run the study's seeds, then add seeds to every condition "
                                 "while a comparison is unresolved (decisions stay valid over the repeated looks); "
                                 "re-running continues.")
    trial_logs: str | None = option(None, "--trial-logs", "Folder for each trial's log, in a sub-folder per study "
                                    "(default runs/studies/; with --launcher, one every node reaches).")
    max_seeds: int | None = option(None, "--max-seeds", "With --until-settled: the most seeds per condition "
                                   "(default: the study's max_seeds, else 4x its seeds).", min=2)
