"""`ttt-lab sweep`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from ttt_lab.studies.runner import run_study
from ttt_lab.studies.spec import StudyError, StudySpec, from_args, from_file

LAUNCHERS = ("slurm", "ray")


def is_study_file(arg: str) -> bool:
    """A study file or a named study (`sweeps/x.yaml`, `x.yaml`, `x`): an override always holds `=`
    or starts with `~` (delete) or `+`."""
    return "=" not in arg and not arg.startswith(("~", "+"))


def is_launcher_setting(arg: str) -> bool:
    return arg.lstrip("+~").startswith("launcher.")


def _study_file(path: Path) -> Path:
    """`path`, or the named study of that name (`ttt_lab.studies.named`: ./sweeps, the user's config
    folders, the package): `ttt-lab sweep batch_size`, `batch_size.yaml` or `sweeps/batch_size.yaml`
    works from any directory."""
    from ttt_lab.studies.named import study_path

    return study_path(path)


def _spec(args: list[str], name: str | None, trials: int | None) -> StudySpec:
    if args and is_study_file(args[0]):
        path = _study_file(Path(args[0]))
        return from_file(path, args[1:], name, trials)
    return from_args(args, name, trials)


def _launch(spec: StudySpec, settings: list[str], launcher: str | None, wait: bool, status: bool):
    """The launcher request (None: workers on this machine), from --launcher and launcher.* overrides
    (`--status` reads them too, to find the jobs)."""
    from ttt_lab.config.load import load
    from ttt_lab.studies.launcher import LaunchRequest

    if launcher is None:
        if settings and not status:
            raise StudyError(f"launcher settings ({' '.join(settings)}) were given without --launcher: add "
                             "--launcher slurm (with launcher.cluster=local to try it on this machine), or drop them.")
        if wait:
            raise StudyError("--wait follows launcher jobs: add --launcher slurm, or drop --wait (a sweep without a "
                             "launcher always waits for its workers).")
        if not status:
            return None
    elif launcher not in LAUNCHERS:
        raise StudyError(f"--launcher {launcher!r} is not one of {', '.join(LAUNCHERS)} (without --launcher the "
                         "workers run on this machine).")
    elif launcher == "ray" and not any(s.startswith("launcher.cluster=") for s in settings):
        settings = [*settings, "launcher.cluster=ray"]
    return LaunchRequest(load([*spec.overrides, *settings]).cfg.launcher, wait)


def sweep(args: list[str], console: Console, *, dry_run: bool = False, workers: int | None = None,
          storage: str | None = None, max_failures: int | None = None, name: str | None = None,
          trials: int | None = None, trial_timeout: float | None = None, launcher: str | None = None,
          wait: bool = False, status: bool = False, until_settled: bool = False, max_seeds: int | None = None
          ) -> int:
    from ttt_lab.tracking.provenance import command_line

    settings = [a for a in args if is_launcher_setting(a)]
    spec = _spec([a for a in args if not is_launcher_setting(a)], name, trials)
    file_settings = [o for o in spec.overrides if is_launcher_setting(o)]
    if file_settings:  # a study file's overrides: where it runs, not what it is
        spec = dataclasses.replace(spec, overrides=[o for o in spec.overrides if not is_launcher_setting(o)])
        settings = [*file_settings, *settings]
    launch = _launch(spec, settings, launcher, wait, status)
    if status:
        from ttt_lab.studies.launcher import show_status

        return show_status(spec, storage, launch.launcher)
    options = {"workers": workers, "storage": storage, "max_failures": max_failures, "dry_run": dry_run,
               "command": command_line(), "trial_timeout": trial_timeout, "launch": launch}
    if max_seeds is not None and not until_settled:
        raise StudyError("--max-seeds bounds --until-settled: add --until-settled, or drop --max-seeds.")
    if until_settled and launch is not None and not launch.wait and not dry_run:
        raise StudyError("--until-settled takes each look when its trials have finished, so it must wait for the "
                         "launcher's jobs: add --wait (and keep the command running, e.g. in tmux or a batch job), "
                         "or drop --until-settled and run `ttt-lab sweep STUDY --until-settled` later.")
    if until_settled:
        from ttt_lab.studies.settle import run_until_settled

        return run_until_settled(spec, max_seeds=max_seeds, dry_run=dry_run, storage=storage,
                                 run=lambda s: run_study(s, **options))
    outcome = run_study(spec, **options)
    return 1 if outcome.failed or outcome.unfinished else 0


def list_studies(console: Console) -> int:
    """`ttt-lab sweep --list`: every named study, where it comes from, and its question."""
    from rich.markup import escape
    from rich.table import Table

    from ttt_lab.studies import named

    table = Table(title="named studies (`ttt-lab sweep NAME`; the first place listed wins)")
    for col in ("name", "from", "file", "question"):
        table.add_column(col, overflow="fold")
    studies = named.all_studies()
    for name, places in studies.items():
        clash = named.clashing(places)
        for i, place in enumerate(places):
            shown = "[bold red]CLASH[/] " + escape(place.origin) if clash else escape(place.origin)
            if not clash and i > 0:
                shown = f"[dim]{escape(place.origin)} (same file content)[/]"
            table.add_row(escape(name), shown, escape(str(place.path)), escape(_question(place.path)))
    console.print(table if studies else "no named studies found (./sweeps, --config-dir folders, the package)")
    if any(named.clashing(p) for p in studies.values()):
        console.print("a CLASH name is defined differently in several places: give the study's path, or rename one",
                      highlight=False)
    return 0


def _question(path: Path) -> str:
    """The study file's `question:` (its first line), or '' when the file cannot be read as YAML."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return ""
    question = data.get("question") if isinstance(data, dict) else None
    return str(question).strip().splitlines()[0] if question else ""
