"""One `ttt-lab sweep` command: the study spec from its arguments, where its workers run, the
plan composed once and handed to the run and to every look of --until-settled, or the study's
status. The Python API calls this; the CLI presents what it returns."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ttt_lab import events
from ttt_lab.studies.checks import check_study
from ttt_lab.studies.plan import Composer, Plan, make_plan
from ttt_lab.studies.runner import StudyOutcome, run_study
from ttt_lab.studies.spec import StudyError, StudySpec, from_args, from_file

LAUNCHERS = ("slurm", "ray")


def is_study_file(arg: str) -> bool:
    """A study file or a named study (`sweeps/x.yaml`, `x.yaml`, `x`): an override always holds `=`
    or starts with `~` (delete) or `+`."""
    return "=" not in arg and not arg.startswith(("~", "+"))


def is_launcher_setting(arg: str) -> bool:
    return arg.lstrip("+~").startswith("launcher.")


def study_spec(args: list[str], name: str | None, trials: int | None) -> tuple[StudySpec, list[str]]:
    """The spec of a named study, a study file or overrides alone (the first argument says which),
    and the launcher.* settings, from the arguments and the study file: where it runs, not what it is."""
    from ttt_lab.studies.named import study_path

    settings = [a for a in args if is_launcher_setting(a)]
    rest = [a for a in args if not is_launcher_setting(a)]
    if rest and is_study_file(rest[0]):
        spec = from_file(study_path(Path(rest[0])), rest[1:], name, trials)
    else:
        spec = from_args(rest, name, trials)
    in_file = [o for o in spec.overrides if is_launcher_setting(o)]
    if in_file:
        spec = dataclasses.replace(spec, overrides=[o for o in spec.overrides if not is_launcher_setting(o)])
    return spec, [*in_file, *settings]


def launch_request(spec: StudySpec, settings: list[str], launcher: str | None, wait: bool, status: bool,
                   compose: Composer):
    """The launcher request (None: workers on this machine), from --launcher and launcher.* settings
    (`--status` reads them too, to find the jobs)."""
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
    return LaunchRequest(compose([*spec.overrides, *settings]).cfg.launcher, wait)


def run(args: list[str], *, name: str | None = None, trials: int | None = None, launcher: str | None = None,
        wait: bool = False, until_settled: bool = False, max_seeds: int | None = None, dry_run: bool = False,
        storage: str | None = None, **options) -> StudyOutcome:
    """Run the study (`options`: run_study's workers, max_failures, command, trial_timeout); with
    `until_settled`, round after round until it settles; the last round's outcome."""
    compose = Composer()
    spec, settings = study_spec(args, name, trials)
    launch = launch_request(spec, settings, launcher, wait, False, compose)
    if max_seeds is not None and not until_settled:
        raise StudyError("--max-seeds bounds --until-settled: add --until-settled, or drop --max-seeds.")
    if until_settled and launch is not None and not launch.wait and not dry_run:
        raise StudyError("--until-settled takes each look when its trials have finished, so it must wait for the "
                         "launcher's jobs: add --wait (and keep the command running, e.g. in tmux or a batch job), "
                         "or drop --until-settled and run `ttt-lab sweep STUDY --until-settled` later.")
    plan = make_plan(spec, compose)
    check_study(plan, storage=storage, until_settled=until_settled, max_seeds=max_seeds, launch=launch, **options)
    if not until_settled:
        return run_study(plan, launch=launch, dry_run=dry_run, storage=storage, **options)
    from ttt_lab.studies.settle import run_until_settled

    rounds: list[StudyOutcome] = []

    def one_round(p: Plan) -> StudyOutcome:
        rounds.append(run_study(p, launch=launch, dry_run=dry_run, storage=storage, **options))
        return rounds[-1]

    run_until_settled(plan, max_seeds=max_seeds, dry_run=dry_run, storage=storage, run=one_round)
    return rounds[-1]  # a round with failed or unfinished trials ends the looks


@dataclass(frozen=True)
class Status:
    """A study's trials (from the storage) and its launcher jobs (from the scheduler)."""

    name: str
    trials: events.Table
    counts: dict[str, int]
    """Trials by Optuna state (`COMPLETE`, `FAIL`, …)."""
    jobs: events.Table | None


def status(args: list[str], *, name: str | None = None, trials: int | None = None, launcher: str | None = None,
           storage: str | None = None) -> Status:
    import optuna

    from ttt_lab.studies.launcher import JOBS_FILE, folder_of, jobs_table
    from ttt_lab.studies.storage import open_storage, storage_url
    from ttt_lab.studies.tables import summary_table

    compose = Composer()
    spec, settings = study_spec(args, name, trials)
    la = launch_request(spec, settings, launcher, False, True, compose).launcher
    url = storage_url(storage, compose(spec.overrides).cfg.home)
    try:
        study = optuna.load_study(study_name=spec.name, storage=open_storage(url))
    except KeyError:
        raise StudyError(f"no study named '{spec.name}' in the storage {url.split('?')[0]} yet: run the sweep first "
                         "(the same arguments without --status), or pass --storage where it ran.") from None
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    jobs = jobs_table(la, spec.name) if (folder_of(la, spec.name) / JOBS_FILE).is_file() else None
    return Status(spec.name, summary_table(study, spec), {s: states.count(s) for s in sorted(set(states))}, jobs)
