"""`ttt-lab sweep STUDY --until-settled`: the study's seeds, then more seeds for every condition
(the pairs kept: every condition gets the same new seeds) while a comparison is unresolved and
the budget allows. Each round is an ordinary sweep (workers, resume, PostgreSQL, SLURM); the looks
taken are kept in the Optuna study, so re-running the command continues where it stopped and the
decision rule (`ttt_lab.studies.decision`) spends its error rate over exactly those looks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from statistics import fmean

from rich.table import Table

from ttt_lab import log
from ttt_lab.formats import points
from ttt_lab.studies.decision import UNRESOLVED, Comparison, decide
from ttt_lab.studies.grid import values as sweep_values
from ttt_lab.studies.spec import StudyError, StudySpec
from ttt_lab.tracking import keys

LOOKS_ATTR, REFERENCE_ATTR = "settle_looks", "settle_reference"
LOG = log.get("studies")


def study_seeds(spec: StudySpec) -> list[int]:
    """The seeds the study names (`seed` in its params); refuses a study without them."""
    expr = spec.params.get("seed")
    if spec.kind != "grid" or expr is None:
        what = "an Optuna search" if spec.kind != "grid" else "a grid without seeds"
        raise StudyError(f"--until-settled adds seeds to every condition of a grid, but '{spec.name}' is {what}. "
                         "Give the study its seeds as a parameter (params: seed: 0,1,2 in its file, or seed=0,1,2 "
                         "on the command line), or drop --until-settled.")
    try:
        seeds = [int(v) for v in sweep_values("seed", expr)]
    except ValueError:
        raise StudyError(f"seed={expr} in '{spec.name}' are not whole numbers; --until-settled needs integer seeds "
                         "(seed: 0,1,2).") from None
    if len(seeds) < 2:
        raise StudyError(f"'{spec.name}' has {len(seeds)} seed; --until-settled compares conditions seed by seed and "
                         "needs at least 2 to start (seed: 0,1,2).")
    return seeds


def seeds_for(initial: list[int], n: int) -> list[int]:
    """The first `n` seeds: the study's own, then the next unused numbers."""
    extra = [max(initial) + 1 + i for i in range(max(0, n - len(initial)))]
    return (initial + extra)[:n]


def with_seeds(spec: StudySpec, seeds: list[int]) -> StudySpec:
    return dataclasses.replace(spec, params={**spec.params, "seed": ",".join(map(str, seeds))})


def objective_by_condition(study, spec: StudySpec) -> dict[str, dict[int, float]]:
    """condition -> seed -> the first objective, from the study's finished trials."""
    from optuna.trial import TrialState

    fixed = set(spec.overrides)
    out: dict[str, dict[int, float]] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        overrides = [o for o in t.user_attrs.get("overrides", []) if o not in fixed]
        seed = next((int(o.split("=", 1)[1]) for o in overrides if o.startswith("seed=")), None)
        if seed is None or not t.values:
            continue
        condition = " ".join(o for o in overrides if not o.startswith("seed=")) or "(baseline)"
        out.setdefault(condition, {})[seed] = float(t.values[0])
    return out


def _reference(study, spec: StudySpec, by_cond: dict[str, dict[int, float]]) -> str:
    """The declared baseline, else the best condition at the first look, kept for every later look."""
    ref = study.user_attrs.get(REFERENCE_ATTR)
    if ref in by_cond:
        return ref
    if spec.baseline in by_cond:
        ref = spec.baseline
    else:
        sign = 1 if spec.objectives[0].direction == "maximize" else -1
        ref = max(by_cond, key=lambda c: sign * fmean(by_cond[c].values()))
    study.set_user_attr(REFERENCE_ATTR, ref)
    return ref


def decisions_table(comps: list[Comparison], n: int, max_seeds: int) -> Table:
    t = Table(title=f"after {n} seeds per condition (at most {max_seeds})")
    for col in ("condition", "compared with", "difference", "interval", "decision", "seeds needed"):
        t.add_column(col)
    for c in comps:
        t.add_row(c.condition, c.reference, f"{points(c.difference)}", f"[{points(c.lo)}, {points(c.hi)}]",
                  c.decision, str(c.seeds_needed or "-") if c.decision == UNRESOLVED else "-")
    return t


def _record(study, store_of: Callable[[], object], spec: StudySpec, looks: list[int], max_seeds: int) -> None:
    """The looks on the study's parent run, where the report reads them."""
    from ttt_lab.tracking.store import run_status, terminate

    parent = study.user_attrs.get("mlflow_parent_run_id")
    store = store_of()
    if parent and store is not None:
        terminate(store, parent, run_status(store, parent) or "FINISHED",  # type: ignore[arg-type]
                  {keys.LOOKS: ",".join(map(str, looks)), keys.MAX_SEEDS: str(max_seeds),
                   keys.MARGIN: str(spec.margin)})


def run_until_settled(spec: StudySpec, *, max_seeds: int | None, dry_run: bool,
                      run: Callable[[StudySpec], object], storage: str | None = None) -> int:
    initial = study_seeds(spec)
    budget = max_seeds or spec.max_seeds or 4 * len(initial)
    if budget < len(initial):
        raise StudyError(f"--max-seeds {budget} is fewer than the {len(initial)} seeds '{spec.name}' starts with; "
                         f"give at least {len(initial)}.")
    if dry_run:
        LOG.info(f"--until-settled: {len(initial)} seeds per condition first, then {len(initial)} more at a "
                 f"time up to {budget}, paired (every condition on the same seeds), margin {spec.margin:g} "
                 f"on {spec.objectives[0].metric}.")
        run(spec)
        return 0
    return _settle(spec, initial, budget, run, storage)


def _settle(spec: StudySpec, initial: list[int], budget: int,
            run: Callable[[StudySpec], object], given_storage: str | None) -> int:
    import optuna

    from ttt_lab.studies.plan import make_plan
    from ttt_lab.studies.storage import open_storage, storage_url

    step = len(initial)
    storage = open_storage(storage_url(given_storage, make_plan(spec).base.cfg.home))
    n = len(initial)
    while True:
        outcome = run(with_seeds(spec, seeds_for(initial, n)))
        if getattr(outcome, "failed", 0) or getattr(outcome, "unfinished", 0):
            LOG.info("some trials did not finish: no look taken. Run the same command again to finish them "
                     "and continue.")
            return 1
        study = optuna.load_study(study_name=spec.name, storage=storage)
        by_cond = objective_by_condition(study, spec)
        looks = [x for x in study.user_attrs.get(LOOKS_ATTR, []) if x < n] + [n]
        study.set_user_attr(LOOKS_ATTR, looks)
        comps = decide(by_cond, _reference(study, spec, by_cond), metric=spec.objectives[0].metric,
                       margin=spec.margin, looks=looks, max_seeds=budget)
        LOG.info(decisions_table(comps, n, budget))
        _record(study, lambda: _store(spec), spec, looks, budget)
        if all(c.decision != UNRESOLVED for c in comps):
            LOG.info(f"settled after {n} seeds per condition ({len(looks)} look(s)).")
            return 0
        if n >= budget:
            need = max((c.seeds_needed or 0) for c in comps)
            where = spec.source if spec.source != "command line" else spec.name
            LOG.info(f"the seed budget ({budget}) is spent and a comparison is still unresolved; about {need} "
                     f"seeds per condition would settle it: `ttt-lab sweep {where} --until-settled --max-seeds "
                     f"{max(need, budget + step)}` continues, reusing every finished trial.")
            return 0
        n = min(budget, n + step)


def _store(spec: StudySpec):
    from ttt_lab.studies.plan import make_plan
    from ttt_lab.tracking.store import open_store

    cfg = make_plan(spec).base.cfg
    return open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
