"""`ttt-lab sweep STUDY --until-settled`: the study's seeds, then more seeds for every condition
(the pairs kept: every condition gets the same new seeds) while a comparison is unresolved and
the budget allows. Each round is an ordinary sweep (workers, resume, PostgreSQL, SLURM); the looks
taken, a fixed design and the error it spent are kept in the Optuna study, so re-running the command
continues where it stopped; the decisions are `ttt_lab.stats.decide`'s."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from statistics import fmean
from typing import Any

from ttt_lab import events, log
from ttt_lab.formats import points
from ttt_lab.stats import floors, projection, words
from ttt_lab.stats.decide import UNRESOLVED, Decisions, decide
from ttt_lab.stats.design import FIXED, Design, default_bounds, planned_looks
from ttt_lab.studies import blocks
from ttt_lab.studies.grid import values as sweep_values
from ttt_lab.studies.plan import Plan
from ttt_lab.studies.spec import StudyError, StudySpec
from ttt_lab.tracking import keys

LOOKS_ATTR, DESIGN_ATTR, SPENT_ATTR = "settle_looks", "settle_design", "settle_error_spent"
LOG = log.get("studies")
Publish = Callable[[Any, str], None]
"""Writes a look's answer on the study's parent run (the store, the parent run's id): the report's
words (`ttt_lab.report.tracked.publish`, which this layer cannot import), handed down by the API."""


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


def objective_by_condition(study, spec: StudySpec) -> dict[str, dict]:
    """condition -> seed (or (block, seed)) -> the first objective, from the finished trials."""
    from optuna.trial import TrialState

    fixed = set(spec.overrides)
    runs = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        overrides = [o for o in t.user_attrs.get("overrides", []) if o not in fixed]
        seed = next((int(o.split("=", 1)[1]) for o in overrides if o.startswith("seed=")), None)
        if seed is not None and t.values:
            runs.append((overrides, seed, float(t.values[0])))
    return blocks.by_condition(runs, spec.blocks or [])[0]


def _reference(spec: StudySpec, by_cond: dict[str, dict]) -> tuple[str, bool]:
    """The declared baseline; else the best condition now, with every pair in the family so that
    choosing it after seeing the data costs its correction."""
    if spec.baseline in by_cond:
        return spec.baseline, True
    if spec.baseline:
        raise StudyError(f"the baseline '{spec.baseline}' ({spec.source}) is none of the study's conditions "
                         f"({', '.join(sorted(by_cond))}); a decision against it cannot be made. Name one of them "
                         "exactly as written there (baseline: key=value, as the trials' overrides spell it).")
    sign = 1 if spec.objectives[0].direction == "maximize" else -1
    return max(by_cond, key=lambda c: sign * fmean(by_cond[c].values())), False


def design_of(spec: StudySpec, initial: int, budget: int) -> Design:
    """The study's declared design; its bounds from the study file or the metric's known range."""
    metric = spec.objectives[0].metric
    bounds = tuple(spec.bounds) if spec.bounds else default_bounds(metric)
    if bounds is None:
        raise StudyError(f"the objective {metric} has no range this project knows, and a valid decision needs one "
                         f"(a difference's evidence is bounded by it). Declare it in {spec.source}: bounds: [low, "
                         "high], e.g. bounds: [-1, 1] for a reward between -1 and 1.")
    looks = tuple(spec.looks or planned_looks(initial, budget)) if spec.decisions == FIXED else ()
    return Design(spec.decisions, spec.margin, (float(bounds[0]), float(bounds[1])), looks,
                  mean_alpha=spec.mean_alpha, delta=spec.delta, collapse_below=spec.collapse_below,
                  collapse_alpha=spec.collapse_alpha)


def _check_declared(study, spec: StudySpec, design: Design) -> None:
    """The design (procedure, endpoints, margin, bounds, delta, alpha split, collapse threshold and,
    for `fixed`, the looks) is stored with the study at its first look; a change after it is refused
    before anything is run or written."""
    declared = study.user_attrs.get(DESIGN_ATTR)
    now = design.declaration()
    if declared is None:
        study.set_user_attr(DESIGN_ATTR, now)
        return
    changed = {k: (declared.get(k), v) for k, v in now.items() if declared.get(k) != v}
    if not changed:
        return
    what = "; ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in changed.items())
    looks = (" A fixed design spends its error rate over the looks it declared: adding or moving a look re-divides "
             "what was already spent, while `decisions: anytime` stays valid however many seeds are added."
             if "looks" in changed else "")
    raise StudyError(
        f"'{spec.name}' stored its decision design at its first look, and this run changes it ({what}). A design "
        "chosen after seeing the data no longer has the error rate it states: a margin, a bound, an alpha split "
        "or a threshold picked once the seeds are known can make any answer come out. Restore the study file's "
        f"settings as declared ({spec.source}), or ask the new question as a new study on new seeds (another "
        f"--name). Nothing was run or written.{looks}")


def decisions_table(result: Decisions, n: int, budget: int) -> events.Table:
    rows = tuple((c.condition, c.reference, f"{c.better}/{c.worse}/{c.ties}",
                  f"{c.improvement:.2f} [{c.improvement_lo:.2f}, {c.improvement_hi:.2f}]", c.decision,
                  f"{points(c.difference)} [{points(c.lo)}, {points(c.hi)}] {c.mean_decision}",
                  _to_go(c)) for c in result.comparisons)
    return events.Table(f"after {n} seeds per condition ({result.design.procedure}; budget {budget})",
                        ("condition", "compared with", "better/worse/tied", "P(improvement)", "decision",
                         "mean difference", "to settle"), rows)


def _to_go(c) -> str:
    if c.decision != UNRESOLVED:
        return "-"
    agree = f"at {c.if_agree} if the next agree" if c.if_agree else ""
    return ", ".join(x for x in (agree, projection.text(c.settle) if c.settle else "") if x) or "-"


def _record(study, store_of: Callable[[], object], spec: StudySpec, result: Decisions, budget: int,
            publish: Publish | None = None) -> None:
    """The looks, the design and the error spent on the study's parent run, where the report reads them;
    then the look's answer there (`publish`)."""
    from ttt_lab.tracking.store import run_status, terminate

    parent = study.user_attrs.get("mlflow_parent_run_id")
    study.set_user_attr(SPENT_ATTR, result.spent)
    store = store_of()
    if parent and store is not None:
        d = result.design
        tags = {keys.LOOKS: ",".join(map(str, study.user_attrs.get(LOOKS_ATTR, []))), keys.MAX_SEEDS: str(budget),
                keys.MARGIN: str(spec.margin), keys.PROCEDURE: d.procedure, keys.MEAN_ALPHA: str(d.mean_alpha),
                keys.DELTA: str(d.delta),
                keys.BOUNDS: f"{d.bounds[0]},{d.bounds[1]}", keys.DECLARED_LOOKS: ",".join(map(str, d.looks)),
                keys.SPENT: ",".join(f"{x:.6g}" for x in result.spent)}
        terminate(store, parent, run_status(store, parent) or "FINISHED", tags)  # type: ignore[arg-type]
        if publish is not None:
            _publish(publish, store, parent)


def _publish(publish: Publish, store: Any, parent: str) -> None:
    """The answer on the parent run; a store that cannot give it back yet (a trial's run not
    delivered) leaves the look's decision as it is, saying why."""
    from ttt_lab.errors import TttLabError

    try:
        publish(store, parent)
    except TttLabError as e:
        LOG.warning(f"the look's answer was not written on the parent run {parent}: {e} `ttt-lab report` "
                    "writes it once the store has every finished trial.")


def run_until_settled(plan: Plan, *, max_seeds: int | None, dry_run: bool,
                      run: Callable[[Plan], object], storage: str | None = None, publish: Publish | None = None) -> int:
    """Run the planned study, then look and add seeds until every comparison is decided or the
    budget is spent; 1 when a round left trials unfinished (no look taken), else 0."""
    spec = plan.spec
    initial = study_seeds(spec)
    budget = max_seeds or spec.max_seeds or (spec.looks[-1] if spec.looks else 4 * len(initial))
    if budget < len(initial):
        raise StudyError(f"--max-seeds {budget} is fewer than the {len(initial)} seeds '{spec.name}' starts with; "
                         f"give at least {len(initial)}.")
    design = design_of(spec, len(initial), budget)
    if design.procedure == FIXED and budget != design.looks[-1]:
        raise StudyError(f"--max-seeds {budget} does not match the last look {design.looks[-1]} that '{spec.name}' "
                         "declares (looks:). A fixed design's budget is its last declared look; change the study "
                         "file before the first trial, or use decisions: anytime.")
    family = _family(spec)
    more = f", then {len(initial)} more at a time up to {budget}" if budget > len(initial) else ""
    LOG.info(f"decisions ({design.procedure}): {len(initial)} seeds per condition first{more}"
             + (f", looks at {', '.join(map(str, design.looks))}" if design.looks else ", looked at after every seed")
             + f"; margin {spec.margin:g} on {spec.objectives[0].metric}; {floors.sentence(design, family)}.")
    if dry_run:
        run(plan)
        return 0
    return _settle(plan, initial, budget, design, run, storage, publish)


def _family(spec: StudySpec) -> int:
    """How many comparisons share the error rate: with a baseline one per other condition, else
    every pair."""
    from ttt_lab.studies.grid import values

    k = 1
    for key, expr in spec.params.items():
        if key != "seed" and key not in (spec.blocks or []):
            k *= len(values(key, expr))
    return k - 1 if spec.baseline else k * (k - 1) // 2


def _looks_at(design: Design, initial: int, budget: int, n: int) -> int:
    """The next seed count to run to after n."""
    if design.procedure == FIXED:
        return next((x for x in design.looks if x > n), budget)
    return min(budget, n + initial)


def _settle(plan: Plan, initial: list[int], budget: int, design: Design,
            run: Callable[[Plan], object], given_storage: str | None, publish: Publish | None = None) -> int:
    import optuna

    from ttt_lab.studies.mutex import study_mutex
    from ttt_lab.studies.storage import open_storage, storage_url

    spec = plan.spec
    url = storage_url(given_storage, plan.base.cfg.home)
    storage = open_storage(url)
    with contextlib.suppress(KeyError):  # an existing study's declared design is checked before any new trial
        _check_declared(optuna.load_study(study_name=spec.name, storage=storage), spec, design)
    n = design.looks[0] if design.procedure == FIXED else len(initial)
    while True:
        outcome = run(plan.replan(with_seeds(spec, seeds_for(initial, n))))
        if getattr(outcome, "failed", 0) or getattr(outcome, "unfinished", 0):
            LOG.info("some trials did not finish: no look taken. Run the same command again to finish them "
                     "and continue.")
            return 1
        study = optuna.load_study(study_name=spec.name, storage=storage)
        _check_declared(study, spec, design)
        by_cond = {c: {s: v for s, v in vs.items() if blocks.seed_of(s) in seeds_for(initial, n)}
                   for c, vs in objective_by_condition(study, spec).items()}
        looks = [x for x in study.user_attrs.get(LOOKS_ATTR, []) if x < n] + [n]
        study.set_user_attr(LOOKS_ATTR, looks)
        reference, declared = _reference(spec, by_cond)
        maximize = spec.objectives[0].direction == "maximize"
        result = decide(by_cond, reference=reference, declared=declared, metric=spec.objectives[0].metric,
                        design=design, looks=looks, maximize=maximize)
        projection.project(result, budget, len(initial), maximize=maximize)
        events.emit(decisions_table(result, n, budget))
        for c in result.comparisons:  # the answer in the endpoint's words, one sentence a comparison
            LOG.info(words.primary(c, metric=spec.objectives[0].metric, direction=spec.objectives[0].direction,
                                   design=design))
        with study_mutex(storage, url, spec.name):  # processes sharing the study: one writes its answer's runs
            _record(study, lambda: _store(plan), spec, result, budget, publish)
        if all(c.decision != UNRESOLVED for c in result.comparisons):
            LOG.info(f"settled after {n} seeds per condition ({len(looks)} look(s)).")
            return 0
        if n >= budget:
            LOG.info(_spent_message(spec, result, budget, len(initial)))
            return 0
        n = _looks_at(design, len(initial), budget, n)


def _spent_message(spec: StudySpec, result: Decisions, budget: int, step: int) -> str:
    where = spec.source if spec.source != "command line" else spec.name
    if result.design.procedure == FIXED:
        return ("the declared looks are all taken and a comparison is still unresolved: that is this design's "
                "answer. A fixed design cannot add seeds after its last look; a new study (another --name) with "
                "more seeds, or `decisions: anytime`, can.")
    best = max((c.settle for c in result.comparisons if c.settle), key=len, default=[])
    likely = next((n for n, p in best if p >= 0.8), None)
    agree = max((c.if_agree or 0 for c in result.comparisons if c.decision == UNRESOLVED), default=0)
    hint = (f"the projection gives an 80 % chance of settling by {likely} seeds" if likely else
            "the projection gives no 80 % chance of settling within four times the budget")
    if agree:
        hint += f"; if every next seed agrees with the majority so far, all decide by {agree} seeds"
    return (f"the seed budget ({budget}) is spent and a comparison is still unresolved; {hint}. Under anytime "
            f"decisions more seeds never inflate the error rate: `ttt-lab sweep {where} --until-settled --max-seeds "
            f"{likely or budget + step}` continues, reusing every finished trial.")


def _store(plan: Plan):
    from ttt_lab.tracking.store import open_store

    cfg = plan.base.cfg
    return open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
