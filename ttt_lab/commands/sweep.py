"""`ttt-lab sweep`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ttt_lab.studies.runner import run_study
from ttt_lab.studies.spec import from_args, from_file


def is_study_file(arg: str) -> bool:
    return arg.endswith((".yaml", ".yml")) and "=" not in arg


def sweep(args: list[str], console: Console, dry_run: bool = False, workers: int | None = None,
          storage: str | None = None, max_failures: int | None = None, name: str | None = None,
          trials: int | None = None, trial_timeout: float | None = None) -> int:
    from ttt_lab.tracking.provenance import command_line

    if args and is_study_file(args[0]):
        path = Path(args[0])
        if not path.is_file():
            from ttt_lab.studies.spec import StudyError

            known = sorted(p.name for p in Path("sweeps").glob("*.yaml")) if Path("sweeps").is_dir() else []
            raise StudyError(f"no study file {path}. Named studies: {', '.join(known) or '(none here)'}.")
        spec = from_file(path, args[1:], name, trials)
    else:
        spec = from_args(args, name, trials)
    outcome = run_study(spec, console, workers, storage, max_failures, dry_run, command_line(), trial_timeout)
    return 1 if outcome.failed or outcome.unfinished else 0
