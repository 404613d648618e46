"""One `ttt-lab sweep` command: the study spec from its arguments, where its workers run, the
plan composed once and handed to the run and to every look of --until-settled, or the study's
status. The Python API calls this; the CLI presents what it returns."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ttt_lab import events
from ttt_lab.studies.checks import check_study
from ttt_lab.studies.options import SweepOptions
from ttt_lab.studies.plan import Composer, Plan, make_plan
from ttt_lab.studies.runner import StudyOutcome, run_study
from ttt_lab.studies.spec import StudyError, StudySpec, from_args, from_file

if TYPE_CHECKING:
    from ttt_lab.studies.settle import Publish


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
    (`--status` reads them too, to find the jobs). `--launcher NAME` sets `launcher.cluster=NAME`
    unless a setting names another (`--launcher slurm launcher.cluster=local`)."""
    from ttt_lab.studies import launchers
    from ttt_lab.studies.launch import LaunchRequest

    if launcher is None:
        if settings and not status:
            raise StudyError(f"launcher settings ({' '.join(settings)}) were given without --launcher: add "
                             "--launcher slurm (with launcher.cluster=local to try it on this machine), or drop them.")
        if wait:
            raise StudyError("--wait follows launcher jobs: add --launcher slurm, or drop --wait (a sweep without a "
                             "launcher always waits for its workers).")
        if not status:
            return None
    elif not any(s.startswith("launcher.cluster=") for s in settings):
        settings = [*settings, f"launcher.cluster={launcher}"]
    request = LaunchRequest(compose([*spec.overrides, *settings]).cfg.launcher, wait)
    if launcher is not None:
        launchers.get(request.launcher.cluster)  # a name no launcher is registered under: refused here
    return request


def run(args: list[str], options: SweepOptions, command: str = "", publish: Publish | None = None) -> StudyOutcome:
    """Run the study; with `options.until_settled`, round after round until it settles; the last
    round's outcome. `command`: the command line, recorded on the study's parent run; `publish`
    writes each look's answer on the study's parent run (the API hands down the report's)."""
    compose = Composer()
    spec, settings = study_spec(args, options.name, options.trials)
    launch = launch_request(spec, settings, options.launcher, options.wait, False, compose)
    if options.max_seeds is not None and not options.until_settled:
        raise StudyError("--max-seeds bounds --until-settled: add --until-settled, or drop --max-seeds.")
    if options.until_settled and launch is not None and not launch.wait and not options.dry_run:
        raise StudyError("--until-settled takes each look when its trials have finished, so it must wait for the "
                         "launcher's jobs: add --wait (and keep the command running, e.g. in tmux or a batch job), "
                         "or drop --until-settled and run `ttt-lab sweep STUDY --until-settled` later.")
    plan = make_plan(spec, compose)
    check_study(plan, storage=options.storage, workers=options.workers, max_failures=options.max_failures,
                trial_timeout=options.trial_timeout, until_settled=options.until_settled, max_seeds=options.max_seeds,
                launch=launch)
    one_look = not options.until_settled and not options.dry_run and _answers(plan.spec, launch)
    if not options.until_settled and not one_look:
        return run_study(plan, options, launch=launch, command=command)
    from ttt_lab.studies.settle import run_until_settled, study_seeds

    rounds: list[StudyOutcome] = []

    def one_round(p: Plan) -> StudyOutcome:
        rounds.append(run_study(p, options, launch=launch, command=command))
        return rounds[-1]

    budget = len(study_seeds(plan.spec)) if one_look else options.max_seeds
    run_until_settled(plan, max_seeds=budget, dry_run=options.dry_run, storage=options.storage, run=one_round,
                      publish=publish)
    return rounds[-1]  # a round with failed or unfinished trials ends the looks


def _answers(spec: StudySpec, launch) -> bool:
    """A grid over seeds ends with one look at its answer, as --until-settled's first look (it adds
    no seed): where this process waits for its trials, and a fixed design's last look is its seeds."""
    from ttt_lab.studies.grid import values

    seeds = spec.params.get("seed")
    if spec.kind != "grid" or seeds is None or len(spec.params) < 2 or (launch is not None and not launch.wait):
        return False
    try:
        n = len(values("seed", seeds))
    except StudyError:
        return False
    return n >= 2 and (spec.decisions != "fixed" or not spec.looks or spec.looks[-1] == n)


@dataclass(frozen=True)
class Status:
    """A study's trials (from the storage) and its launcher jobs (from the scheduler)."""

    name: str
    trials: events.Table
    counts: dict[str, int]
    """Trials by Optuna state (`COMPLETE`, `FAIL`, …)."""
    jobs: events.Table | None


def status(args: list[str], options: SweepOptions) -> Status:
    """The study's trials and launcher jobs; of `options`, those naming the study and where it ran."""
    import optuna

    from ttt_lab.studies.launch import JOBS_FILE, folder_of, jobs_table
    from ttt_lab.studies.storage import open_storage, storage_url
    from ttt_lab.studies.tables import summary_table

    compose = Composer()
    spec, settings = study_spec(args, options.name, options.trials)
    la = launch_request(spec, settings, options.launcher, False, True, compose).launcher
    url = storage_url(options.storage, compose(spec.overrides).cfg.home)
    try:
        study = optuna.load_study(study_name=spec.name, storage=open_storage(url))
    except KeyError:
        raise StudyError(f"no study named '{spec.name}' in the storage {url.split('?')[0]} yet: run the sweep first "
                         "(the same arguments without --status), or pass --storage where it ran.") from None
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    jobs = jobs_table(la, spec.name) if (folder_of(la, spec.name) / JOBS_FILE).is_file() else None
    return Status(spec.name, summary_table(study, spec), {s: states.count(s) for s in sorted(set(states))}, jobs)
