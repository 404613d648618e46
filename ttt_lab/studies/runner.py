"""`ttt-lab sweep`: plan, recover what a crash left, enqueue, run the workers, summarise.

Optuna's storage is the truth about trials (one Optuna trial per attempt; grid points and
failed search trials are enqueued, workers claim them atomically); MLflow mirrors it: one
parent run per study, one child run per attempt, the Optuna state as a tag.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ttt_lab.studies.mutex import study_mutex
from ttt_lab.studies.plan import Plan, make_plan
from ttt_lab.studies.spec import StudyError, StudySpec
from ttt_lab.studies.storage import create_or_load, open_storage, storage_url
from ttt_lab.studies.worker import WorkerJob, worker_main

DONE = ("COMPLETE", "PRUNED")


@dataclass
class StudyOutcome:
    name: str
    parent_run_id: str | None
    finished: int = 0
    failed: int = 0
    pruned: int = 0
    ran: list = field(default_factory=list)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _states_by_hash(study) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in study.get_trials(deepcopy=False):
        h = t.user_attrs.get("config_hash")
        if h:
            out.setdefault(h, set()).add(t.state.name)
    return out


def fail_trial(study, storage, store, frozen, why: str) -> None:
    """Mark one RUNNING trial failed in Optuna and its child run failed in MLflow."""
    from optuna.trial import TrialState

    from ttt_lab.tracking.store import terminate

    tid = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name),
                                                          frozen.number)
    storage.set_trial_user_attr(tid, "error", why)
    storage.set_trial_state_values(tid, TrialState.FAIL)
    run_id = frozen.user_attrs.get("mlflow_run_id")
    if run_id:
        terminate(store, run_id, "FAILED", {"optuna.state": "FAIL", "ttt.error": why})


def recover(study, storage, store) -> list[int]:
    """Trials left RUNNING by a dead worker: this host's by process id, others' by heartbeat."""
    import optuna
    from optuna.trial import TrialState

    from ttt_lab.tracking.store import run_status, terminate

    host = socket.gethostname()
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = t.user_attrs.get("pid")
        if t.user_attrs.get("host") == host and isinstance(pid, int) and not pid_alive(pid):
            fail_trial(study, storage, store, t, f"worker {host}:{pid} died during the trial")
            failed.append(t.number)
    failed += optuna.storages.fail_stale_trials(study) or []
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        run_id = t.user_attrs.get("mlflow_run_id")
        if run_id and run_status(store, run_id) == "RUNNING":
            terminate(store, run_id, "FAILED", {"optuna.state": "FAIL", "ttt.error": "worker stopped heartbeating"})
    return sorted(set(failed))


def enqueue_grid(study, plan: Plan) -> int:
    """Enqueue every grid point not finished, running or queued already; how many were."""
    by_hash = _states_by_hash(study)
    n = 0
    for t in plan.trials:
        states = by_hash.get(t.config_hash, set())
        if states & {"COMPLETE", "PRUNED", "RUNNING", "WAITING"}:
            continue
        grid_params = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in t.overrides}
        study.enqueue_trial(grid_params, user_attrs={"overrides": t.overrides, "config_hash": t.config_hash,
                                            "grid_index": t.index, "grid_params": grid_params})
        n += 1
    return n


def requeue_failed(study) -> int:
    """A search re-runs each failed trial's parameters once more."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    n = 0
    for t in trials:
        if t.state == TrialState.FAIL and t.number not in retried and t.params:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
            n += 1
    return n


def parent_run(study, store, plan: Plan, command: str) -> str:
    """The study's one parent run: made by the first process to hold the study's mutex (call
    inside it), found by the others."""
    import json

    from ttt_lab.tracking import provenance
    from ttt_lab.tracking.store import TrackedRun

    spec = plan.spec
    run_id = study.user_attrs.get("mlflow_parent_run_id")
    if run_id:
        run = TrackedRun.reopen(store, run_id)
        if run is not None:
            return run.run_id
    tags = provenance.tags(plan.base.config_hash, plan.base.cfg.seed, command) | {
        "ttt.kind": "sweep", "ttt.study": spec.name, "ttt.study_kind": spec.kind, "ttt.study_source": spec.source,
        "ttt.question": spec.question, "ttt.objectives": json.dumps([o.__dict__ for o in spec.objectives]),
        "ttt.params": json.dumps(spec.params), "ttt.overrides": " ".join(spec.overrides)}
    run = TrackedRun(store, spec.name, name=spec.name, tags=tags)
    plan_rows = [{"trial": t.index, "overrides": t.overrides, "config_hash": t.config_hash} for t in plan.trials]
    run.log_text(json.dumps({"spec": _spec_dict(spec), "trials": plan_rows}, indent=2), "plan.json")
    study.set_user_attr("mlflow_parent_run_id", run.run_id)
    return run.run_id


def _spec_dict(spec: StudySpec) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(spec)


def plan_table(plan: Plan, states: dict[str, set[str]]) -> Table:
    t = Table(title=f"study '{plan.spec.name}': {len(plan.trials)} trials ({plan.spec.source})", title_justify="left")
    for col in ("trial", "overrides", "config hash", "done?"):
        t.add_column(col)
    for p in plan.trials:
        s = states.get(p.config_hash, set())
        done = "yes" if s & set(DONE) else "running" if "RUNNING" in s else "failed before" if "FAIL" in s else "no"
        t.add_row(str(p.index), " ".join(p.overrides), p.config_hash, done)
    return t


def search_table(plan: Plan) -> Table:
    t = Table(title=f"search '{plan.spec.name}': {plan.spec.n_trials} trials, sampler {plan.spec.sampler['name']}, "
              f"pruner {plan.spec.pruner['name']}", title_justify="left")
    t.add_column("parameter")
    t.add_column("distribution")
    for k, d in plan.distributions.items():
        t.add_row(k, repr(d))
    return t


def summary_table(study, spec: StudySpec) -> Table:
    t = Table(title=f"study '{spec.name}'", title_justify="left")
    for col in ("trial", "state", "overrides", *[o.metric for o in spec.objectives], "minutes"):
        t.add_column(col)
    for tr in study.get_trials(deepcopy=False):
        if tr.state.name == "WAITING":
            continue
        vals = [f"{v:.3f}" for v in tr.values] if tr.values else ["-"] * len(spec.objectives)
        mins = f"{tr.duration.total_seconds() / 60:.1f}" if tr.duration else "-"
        t.add_row(str(tr.number), tr.state.name, " ".join(tr.user_attrs.get("overrides") or
                                                         [f"{k}={v}" for k, v in tr.params.items()]), *vals, mins)
    return t


def _open(plan: Plan, given_storage: str | None, tracking: bool = True):
    cfg = plan.base.cfg
    if not cfg.tracking.enabled:
        raise StudyError("sweeps are tracked: tracking.enabled=false is not allowed for `ttt-lab sweep` (its trials, "
                         "resume and reports live in MLflow).")
    storage = open_storage(storage_url(given_storage, cfg.home))
    if not tracking:
        return storage, None
    from ttt_lab.tracking.store import open_store

    return storage, open_store(cfg.tracking.uri, cfg.tracking.artifacts)


def _existing_states(storage, name: str) -> dict[str, set[str]]:
    import optuna

    try:
        return _states_by_hash(optuna.load_study(study_name=name, storage=storage))
    except KeyError:
        return {}


def run_study(spec: StudySpec, console: Console, workers: int | None = None, storage: str | None = None,
              max_failures: int | None = None, dry_run: bool = False, command: str = "") -> StudyOutcome:
    plan = make_plan(spec)
    optuna_storage, store = _open(plan, storage, tracking=not dry_run)
    if dry_run:
        console.print(plan_table(plan, _existing_states(optuna_storage, spec.name)) if spec.kind == "grid"
                      else search_table(plan))
        return StudyOutcome(spec.name, None)
    study = create_or_load(optuna_storage, spec, plan.distributions)
    url = storage_url(storage, plan.base.cfg.home)

    def on_wait() -> None:
        console.print(f"another process is updating study '{spec.name}'; waiting for it", highlight=False)

    with study_mutex(optuna_storage, url, spec.name, on_wait):
        parent = parent_run(study, store, plan, command)
        recovered = recover(study, optuna_storage, store)
        if recovered:
            console.print(f"marked failed (their worker died): trials {recovered}", highlight=False)
        if spec.kind == "grid":
            enqueue_grid(study, plan)
        else:
            requeue_failed(study)
    waiting = _count(study, "WAITING")
    todo = waiting if spec.kind == "grid" else max(0, spec.n_trials - _counted(study)) + waiting
    outcome = StudyOutcome(spec.name, parent)
    if todo:
        _run_workers(plan, optuna_storage, store, parent, workers or spec.workers, max_failures, todo, console,
                     outcome, url)
    else:
        console.print(f"study '{spec.name}': every trial is done already; nothing to run.", highlight=False)
    _finish(study, store, parent, spec, console)
    return outcome


def _count(study, state: str) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState[state],)))


def _counted(study) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED,
                                                         TrialState.RUNNING, TrialState.WAITING)))


def _run_workers(plan: Plan, storage, store, parent: str, workers: int, max_failures: int | None, todo: int,
                 console: Console, outcome: StudyOutcome, url: str) -> None:
    import multiprocessing as mp

    from ttt_lab.progress import games_progress

    cfg = plan.base.cfg
    workers = max(1, min(workers, todo))
    log_dir = Path(cfg.home) / "studies" / plan.spec.name
    log_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")
    events, stop = ctx.Queue(), ctx.Event()
    threads = max(1, (os.cpu_count() or 1) // workers)
    procs = {}
    for i in range(workers):
        job = WorkerJob(plan.spec, url, parent, cfg.tracking.uri, cfg.tracking.artifacts,
                        str(Path(cfg.home).resolve()), i, threads, str(log_dir), max_failures, plan.distributions)
        procs[i] = ctx.Process(target=worker_main, args=(job, events, stop), daemon=False)
        procs[i].start()
    running: dict[int, int] = {}
    exited: set[int] = set()
    console.print(f"{workers} worker(s), {threads} torch thread(s) each; trial logs in {log_dir}", highlight=False)
    with games_progress(console) as progress:
        task = progress.add_task(f"study {plan.spec.name}", total=todo)
        while len(exited) < len(procs):
            _pump(events, console, progress, task, running, exited, outcome, max_failures, stop)
            for i, p in procs.items():
                if i not in exited and not p.is_alive() and events.empty():
                    _worker_died(i, p, running, exited, plan, storage, store, console, outcome)
    for p in procs.values():
        p.join()


def _pump(events, console, progress, task, running, exited, outcome, max_failures, stop) -> None:
    import queue

    try:
        kind, worker, payload = events.get(timeout=0.5)
    except queue.Empty:
        return
    if kind == "start":
        running[worker] = payload[0]
    elif kind == "end":
        running.pop(worker, None)
        r = payload
        outcome.ran.append(r)
        outcome.finished += r.state == "COMPLETE"
        outcome.pruned += r.state == "PRUNED"
        outcome.failed += r.state == "FAIL"
        vals = ", ".join(f"{v:.3f}" for v in r.values) if r.values else r.error or ""
        colour = {"COMPLETE": "green", "PRUNED": "yellow", "FAIL": "red"}[r.state]
        console.print(f"trial {r.number} [{colour}]{r.state}[/] in {r.seconds:.1f} s  {vals}", highlight=False)
        progress.advance(task, 1)
        if max_failures is not None and outcome.failed >= max_failures and not stop.is_set():
            console.print(f"[red]{outcome.failed} failed trials: stopping (--max-failures {max_failures})[/]")
            stop.set()
    elif kind == "exit":
        exited.add(worker)


def _worker_died(i: int, proc, running, exited, plan: Plan, storage, store, console, outcome) -> None:
    import optuna

    exited.add(i)
    number = running.pop(i, None)
    console.print(f"[red]worker {i} died (exit code {proc.exitcode})[/]"
                  + (f" during trial {number}; marked failed" if number is not None else ""), highlight=False)
    if number is not None:
        study = optuna.load_study(study_name=plan.spec.name, storage=storage)
        frozen = study.get_trials(deepcopy=False)[number]
        if frozen.state.name == "RUNNING":
            fail_trial(study, storage, store, frozen, f"worker died (exit code {proc.exitcode})")
        outcome.failed += 1


def _finish(study, store, parent: str, spec: StudySpec, console: Console) -> None:
    from optuna.trial import TrialState

    from ttt_lab.tracking.store import terminate

    trials = study.get_trials(deepcopy=False)
    counts = {s: sum(t.state == s for t in trials) for s in TrialState}
    console.print(summary_table(study, spec))
    failed = counts[TrialState.FAIL]
    complete = counts[TrialState.COMPLETE]
    status = "FINISHED" if not any(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials) else "RUNNING"
    terminate(store, parent, status if status != "RUNNING" else "FAILED",
              {"ttt.trials_complete": str(complete), "ttt.trials_failed": str(failed),
               "ttt.trials_pruned": str(counts[TrialState.PRUNED])})
    console.print(f"MLflow UI: `ttt-lab ui`, then experiment '{spec.name}' (parent run {parent}; one child run "
                  "per trial).", highlight=False)
    import importlib.util

    if importlib.util.find_spec("ttt_lab.report") is not None:
        console.print(f"Report: `ttt-lab report {spec.name}`.", highlight=False)
