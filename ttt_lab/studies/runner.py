"""`ttt-lab sweep`: plan, recover what a crash left, enqueue, run the workers, summarise.

Optuna's storage is the truth about trials (one Optuna trial per attempt; grid points and
failed search trials are enqueued, workers claim them through `Study.ask`); MLflow mirrors
it: one parent run per study, one child run per attempt, the Optuna state as a tag. The
steps live in their own modules: `recovery` (dead workers' trials), `enqueue`,
`parent_run`, `pool` (the worker processes), `tables` (what is printed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ttt_lab import events, log
from ttt_lab.studies.enqueue import SETTLED, count, enqueue_grid, requeue_failed, states_by_hash
from ttt_lab.studies.mutex import study_mutex
from ttt_lab.studies.options import SweepOptions
from ttt_lab.studies.parent_run import close_parent, parent_run
from ttt_lab.studies.plan import Plan
from ttt_lab.studies.pool import Tally, WorkerPool
from ttt_lab.studies.recovery import recover
from ttt_lab.studies.spec import StudyError, StudySpec
from ttt_lab.studies.storage import create_or_load, open_storage, storage_url
from ttt_lab.studies.tables import plan_table, search_table, summary_table

LOG = log.get("studies")


@dataclass
class StudyOutcome:
    name: str
    parent_run_id: str | None
    finished: int = 0
    failed: int = 0
    pruned: int = 0
    unfinished: int = 0
    """Trials nobody is running or will run when this process stops (a worker of ours died,
    --max-failures left trials waiting); trials another live process is running do not count."""


def _open(plan: Plan, given_storage: str | None, tracking: bool = True):
    cfg = plan.base.cfg
    if not cfg.tracking.enabled:
        raise StudyError("sweeps are tracked: tracking.enabled=false is not allowed for `ttt-lab sweep` (its trials, "
                         "resume and reports live in MLflow).")
    storage = open_storage(storage_url(given_storage, cfg.home))
    if not tracking:
        return storage, None
    from ttt_lab.tracking.store import open_store

    return storage, open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)


def _dry_run(plan: Plan, storage, launch=None, workers: int | None = None) -> StudyOutcome:
    import optuna

    if plan.spec.kind != "grid":
        events.emit(search_table(plan))
    else:
        try:
            states = states_by_hash(optuna.load_study(study_name=plan.spec.name, storage=storage))
        except KeyError:
            states = {}
        events.emit(plan_table(plan, states))
    LOG.info(design_line(plan, workers))
    if launch is not None:
        la = launch.launcher
        shown = launch.backend.plan(la, plan.spec.name, la.workers or workers or plan.spec.workers)
        if shown:
            LOG.info(shown)
    return StudyOutcome(plan.spec.name, None)


def design_line(plan: Plan, workers: int | None = None) -> str:
    """How the study's comparisons will be decided (its seeds, its reference, when a comparison
    whose seeds all agree decides) and about how long its trials take."""
    from ttt_lab.stats.design import Design
    from ttt_lab.stats.floors import agreeing
    from ttt_lab.studies import estimate
    from ttt_lab.studies.grid import values

    spec = plan.spec
    seeds = spec.params.get("seed")
    chosen = " (none named: as many as a comparison whose seeds all agree needs; seed=... sets them)" \
        if spec.default_seeds else ""
    design = (f"seeds {seeds} in every condition{chosen}, compared seed by seed" if seeds else
              "no seed parameter (one seed per condition: comparisons over seeds need seed=0,1,2)")
    k = 1
    for key, expr in spec.params.items() if spec.kind == "grid" else ():
        if key not in ("seed", *(spec.blocks or [])):
            k *= len(values(key, expr))
    family = max(1, k - 1 if spec.baseline else k * (k - 1) // 2)
    ref = (f"each condition against {spec.baseline}" + (" (the first value typed: a family of "
           f"{family} comparisons, not every pair)" if spec.default_seeds else "") if spec.baseline else
           f"every pair of conditions ({family} comparisons)")
    agree = agreeing(Design(spec.decisions, looks=tuple(spec.looks or ())), family) if k > 1 else None
    when = f"; a comparison whose seeds all agree decides after {agree} seeds" if agree else ""
    n = max(1, workers or spec.workers)
    total = estimate.study_seconds((t.seconds, t.warm_up) for t in plan.trials) / n
    cost = f"; {len(plan.trials)} trials on {n} worker(s): {estimate.text(total)}" if plan.trials else ""
    if spec.kind != "grid":
        return (f"a search on {spec.objectives[0].metric}: its trials are ranked, not decided{cost}; a grid over "
                "the best settings and seeds answers whether they are better.")
    return (f"decided on {spec.objectives[0].metric}, {ref}: the share of seeds on which a condition trains the "
            f"better policy first, the mean difference beside it (margin ±{spec.margin:g}); {design}{when}{cost}; "
            f"--until-settled adds seeds up to {spec.max_seeds or 'four times as many'}.")


def _prepare(study, storage, store, plan: Plan, url: str, command: str) -> str:
    """Under the study's mutex: the parent run, dead workers' trials failed, trials enqueued."""
    spec = plan.spec

    def on_wait() -> None:
        LOG.info(f"another process is updating study '{spec.name}'; waiting for it")

    with study_mutex(storage, url, spec.name, on_wait):
        parent = parent_run(study, store, plan, command)
        recovered = recover(study, storage, store)
        if recovered:
            LOG.info(f"marked failed (their worker died): trials {recovered}")
        if spec.kind == "grid":
            enqueue_grid(study, plan)
        else:
            requeue_failed(study)
    return parent


def _unfinished(study, spec: StudySpec) -> int:
    from optuna.trial import TrialState

    if spec.kind == "grid":
        return count(study, TrialState.WAITING)
    return max(0, (spec.n_trials or 0) - count(study, TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))


def trial_logs(plan: Plan, options: SweepOptions) -> Path:
    """The folder of the study's trial logs (one file per trial), created."""
    from ttt_lab.names import under

    folder = (Path(options.trial_logs).resolve() if options.trial_logs else under(plan.base.cfg.home, "studies")
              ) / plan.spec.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _launch(plan: Plan, launch, parent: str, url: str, todo: int, workers: int, max_failures: int | None,
            log_dir: Path) -> Tally | None:
    """The workers as scheduler jobs; the tally when waiting for them, None when not."""
    from ttt_lab.studies import launch as launcher
    from ttt_lab.studies.worker import plan_job

    la = launch.launcher
    n = max(1, min(la.workers or workers, todo))
    base = plan_job(plan, url, parent, 0, 1, str(log_dir), max_failures)
    workers_ = launcher.worker_jobs(base, la, n)
    jobs = launcher.submit(workers_, la)
    if not launch.wait:
        LOG.info(f"the workers run on their own: trial logs in {log_dir}; the last one closes the parent run. "
                 "Add --status to the same command to see the trials and jobs, --wait to follow them.")
        return None
    return launcher.follow(jobs, workers_[0], la, todo)


def run_study(plan: Plan, options: SweepOptions | None = None, *, launch=None, command: str = "") -> StudyOutcome:
    """Run the planned study's trials (on this machine, or as launcher jobs) with the sweep's
    `options`; its tally."""
    from optuna.trial import TrialState

    options = options or SweepOptions()
    spec, storage, workers, dry_run = plan.spec, options.storage, options.workers, options.dry_run
    max_failures = options.max_failures
    url = storage_url(storage, plan.base.cfg.home)
    if launch is not None and not dry_run:
        launch.backend.check(launch.launcher, url, plan.base.cfg.tracking.uri)
    optuna_storage, store = _open(plan, storage, tracking=not dry_run)
    if dry_run:
        return _dry_run(plan, optuna_storage, launch, workers)
    study = create_or_load(optuna_storage, spec, plan.distributions)
    LOG.info(design_line(plan, workers))
    parent = _prepare(study, optuna_storage, store, plan, url, command)
    waiting = count(study, TrialState.WAITING)
    todo = waiting if spec.kind == "grid" else max(0, (spec.n_trials or 0) - count(study, *SETTLED)) + waiting
    tally = Tally()
    if todo and launch is not None:
        launched = _launch(plan, launch, parent, url, todo, workers or spec.workers, max_failures,
                           trial_logs(plan, options))
        if launched is None:
            return StudyOutcome(spec.name, parent)
        tally = launched
    elif todo:
        pool = WorkerPool(plan, optuna_storage, store, parent, url, max_failures, options.trial_timeout)
        tally = pool.run(workers or spec.workers, todo, trial_logs(plan, options))
    else:
        LOG.info(f"study '{spec.name}': every trial is done already; nothing to run.")
    events.emit(summary_table(study, spec))
    left = _unfinished(study, spec) + tally.died
    if left:
        LOG.warning(f"{left} trial(s) of study '{spec.name}' are unfinished; run the same command again to run them.")
    close_parent(study, store, parent)
    LOG.info(f"MLflow UI: `ttt-lab ui`, then experiment '{spec.name}' (parent run {parent}; one child run "
             f"per trial). Report: `ttt-lab report {spec.name}`.")
    return StudyOutcome(spec.name, parent, tally.finished, tally.failed, tally.pruned, left)
