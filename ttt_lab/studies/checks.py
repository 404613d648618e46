"""Every setting of a study checked against what it will run, before any trial, MLflow run or
Optuna record is written: the planned grid (its trials' overrides and composed configs), the
objective's metric and range, and the command's own options. A setting that cannot mean what
its user meant is one paragraph naming the key, the value and the fix (`StudyError`: exit 2,
no traceback), and nothing is written.

`ttt_lab.studies.spec` checks each value's shape as it is read; `plan.make_plan` composes every
trial's config (keys and values the config schema refuses) and checks the objective's name here
(`check_objectives`); `command.run` calls `check_study` once the plan is made, before anything
runs or is written (a dry run included). The places it writes to: `ttt_lab.studies.places`."""

from __future__ import annotations

import math
from typing import Any

from ttt_lab import log
from ttt_lab.errors import TttLabError
from ttt_lab.studies.places import check_places
from ttt_lab.studies.spec import StudyError, StudySpec

SHOWN = 8
"""Conditions listed in a message at most."""
LOG = log.get("studies")


def check_study(plan, *, storage: str | None = None, workers: Any = None, max_failures: Any = None,
                trial_timeout: Any = None, until_settled: bool = False, max_seeds: Any = None, launch=None,
                **_: Any) -> None:
    """The planned study and the command's options (`ttt_lab.studies.command.run`'s), or a
    StudyError naming the first setting that cannot be right. Reads only."""
    spec: StudySpec = plan.spec
    _options(workers, max_failures, trial_timeout, max_seeds)
    _counts(spec, max_seeds)
    _search_settings(spec)
    _pruning(spec, plan.base.cfg)
    _decision_settings(spec)
    if spec.kind == "grid":
        _baseline(spec, [t.overrides for t in plan.trials])
        _distinct(plan)
    else:
        _search_params(plan)
    check_places(plan.base.cfg, storage, launch)


# ---- the metric the study decides on


def check_objectives(spec: StudySpec) -> None:
    """Each objective names a metric a trial logs (`ttt_lab.evaluation.metric_names`), unless it
    is declared `custom: true`."""
    from ttt_lab.evaluation.metric_names import is_logged, nearest

    for o in spec.objectives:
        if not isinstance(o.metric, str) or not o.metric:
            raise StudyError(f"objective metric {o.metric!r} ({spec.source}) is not a metric name, e.g. "
                             "objective: {metric: eval/optimal/draw_rate, direction: maximize}.")
        if o.custom or is_logged(o.metric):
            continue
        near = nearest(o.metric)
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        raise StudyError(
            f"objective metric {o.metric!r} ({spec.source}) is not a final evaluation metric that a trial logs{hint}, "
            "so no trial could report it. A trial ends with eval/random/… and eval/optimal/… (win_rate, draw_rate, "
            "loss_rate, invalid_rate, format_rate, reward, mean_turns), eval/exploitability and eval/exploiter/… "
            "(the exact evaluation of a greedy policy), and with audit.policy.in_studies=true the policy audit's "
            "audit/policy/memorisation.gap, fork_allowed_rate, optimal_agreement. For a metric your own code adds "
            "to the trial's final metrics, declare it in the study file: objective: {metric: NAME, direction: "
            "maximize, custom: true}.")


# ---- counts


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _options(workers: Any, max_failures: Any, trial_timeout: Any, max_seeds: Any) -> None:
    if workers is not None and not _whole(workers, 1):
        raise StudyError(f"--workers {workers!r} is not a number of worker processes: give a whole number of at "
                         "least 1 (or leave it out for the study's own workers:).")
    if max_failures is not None and not _whole(max_failures, 1):
        raise StudyError(f"--max-failures {max_failures!r} must be a whole number of at least 1 (the failed trials "
                         "after which workers stop claiming new ones); leave it out to run every trial.")
    if trial_timeout is not None and (isinstance(trial_timeout, bool) or not isinstance(trial_timeout, int | float)
                                      or not math.isfinite(trial_timeout) or trial_timeout <= 0):
        raise StudyError(f"--trial-timeout {trial_timeout!r} must be a positive number of seconds (the time a trial "
                         "may run before its worker is stopped), e.g. --trial-timeout 3600.")
    if max_seeds is not None and not _whole(max_seeds, 2):
        raise StudyError(f"--max-seeds {max_seeds!r} must be a whole number of at least 2: the most seeds per "
                         "condition --until-settled may run.")


def _seed_values(spec: StudySpec) -> list[str] | None:
    from ttt_lab.studies.grid import values

    expr = spec.params.get("seed")
    return None if spec.kind != "grid" or expr is None else values("seed", expr)


def _counts(spec: StudySpec, max_seeds: Any) -> None:
    where = spec.source
    if spec.kind == "grid" and spec.n_trials is not None:
        raise StudyError(f"n_trials {spec.n_trials!r} ({where}, or --trials) is the number of trials of an Optuna "
                         "search, but this study is a grid, which runs each combination of its values once. Drop "
                         "n_trials/--trials, or make it a search (kind: search, with interval(…) or choice(…) "
                         "values).")
    if spec.kind == "search" and spec.n_trials is not None and spec.n_trials > 100_000:
        raise StudyError(f"n_trials {spec.n_trials} ({where}) is more trials than a study can run; give a number "
                         "you mean to train, e.g. n_trials: 50.")
    seeds = _seed_values(spec)
    declared = spec.max_seeds
    if (declared is not None or spec.looks) and seeds is None:
        what = "max_seeds" if declared is not None else "looks"
        raise StudyError(f"{what} ({where}) counts seeds per condition for --until-settled, but this study "
                         f"{'is an Optuna search' if spec.kind != 'grid' else 'has no seed parameter'}: there are no "
                         "seeds to add. Give a grid its seeds (params: seed: 0,1,2), or drop "
                         f"{what}.")
    if seeds is None:
        return
    budget = max_seeds if max_seeds is not None else declared
    if budget is not None and budget < len(seeds):
        key = "--max-seeds" if max_seeds is not None else "max_seeds"
        raise StudyError(f"{key} {budget} ({where}) is fewer than the {len(seeds)} seeds the study starts with "
                         f"(seed: {spec.params['seed']}); give at least {len(seeds)}, or list fewer seeds.")
    if spec.looks and declared is not None and spec.decisions == "fixed" and spec.looks[-1] != declared:
        raise StudyError(f"looks {spec.looks} ({where}) end at {spec.looks[-1]} seeds but max_seeds is {declared}: "
                         "a fixed design's budget is its last declared look. Make max_seeds the last look, or drop "
                         "max_seeds.")


def _search_settings(spec: StudySpec) -> None:
    """The sampler's and the pruner's numbers (their names and keys are checked as they are read)."""
    s, p = spec.sampler, spec.pruner
    whole = {"sampler": {"seed": 0, "n_startup_trials": 0},
             "pruner": {"n_startup_trials": 0, "n_warmup_steps": 0, "reduction_factor": 2}}
    for kind, given in (("sampler", s), ("pruner", p)):
        for key, least in whole[kind].items():
            if key in given and given[key] is not None and not _whole(given[key], least):
                raise StudyError(f"{kind}.{key} {given[key]!r} ({spec.source}) must be a whole number of at least "
                                 f"{least}.")
    if "seed" in s and s["seed"] is not None and s["seed"] >= 2**32:
        raise StudyError(f"sampler.seed {s['seed']} ({spec.source}) must be below 2**32.")
    for key in ("multivariate", "constant_liar"):
        if key in s and not isinstance(s[key], bool):
            raise StudyError(f"sampler.{key} {s[key]!r} ({spec.source}) is true or false.")
    mr = p.get("min_resource", "auto")
    if mr != "auto" and not _whole(mr, 1):
        raise StudyError(f"pruner.min_resource {mr!r} ({spec.source}) must be auto or a whole number of at least 1 "
                         "(evaluation steps before the first rung).")
    if p["name"] == "threshold":
        lo, hi = p.get("lower"), p.get("upper")
        bad = [x for x in (lo, hi) if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)
                                                          or not math.isfinite(x))]
        if bad or (lo is None and hi is None) or (lo is not None and hi is not None and lo >= hi):
            raise StudyError(f"the threshold pruner's lower {lo!r} and upper {hi!r} ({spec.source}) must be numbers, "
                             "at least one of them given, with lower < upper: a trial whose objective leaves "
                             "[lower, upper] is pruned.")
    if s["name"] == "grid" and spec.kind == "search" and any("interval(" in v for v in spec.params.values()):
        raise StudyError(f"the grid sampler ({spec.source}) enumerates choice(…) values, but "
                         f"{', '.join(k for k, v in spec.params.items() if 'interval(' in v)} is an interval. Use the "
                         "tpe or random sampler, or list choice(…) values.")


def _pruning(spec: StudySpec, cfg) -> None:
    """A pruner that could never prune: it watches the intermediate evaluations of one objective."""
    if spec.pruner["name"] == "none":
        return
    from ttt_lab.evaluation.metric_names import AUDIT_PREFIX

    metric = spec.objectives[0].metric
    if metric.startswith(AUDIT_PREFIX) or spec.objectives[0].custom:
        raise StudyError(f"the {spec.pruner['name']} pruner ({spec.source}) watches the objective at each "
                         f"evaluation during training, but {metric} exists only when the trial ends. Use pruner: "
                         "{name: none}, or an eval/… objective.")
    if cfg.train.eval_every == 0:
        raise StudyError(f"the {spec.pruner['name']} pruner ({spec.source}) watches the evaluations during "
                         "training, but train.eval_every=0 turns them off, so no trial would ever be pruned. Set "
                         "train.eval_every (e.g. train.eval_every=10) in the study's overrides, or use pruner: "
                         "{name: none}.")


# ---- decisions


def _decision_settings(spec: StudySpec) -> None:
    """Margin, collapse threshold and alpha inside the objective's range."""
    from ttt_lab.stats.design import ALPHA, default_bounds

    o = spec.objectives[0]
    bounds = tuple(spec.bounds) if spec.bounds else default_bounds(o.metric)
    said = f"bounds {list(spec.bounds)}" if spec.bounds else f"the range of {o.metric}"
    m = spec.margin
    if isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m <= 0:
        raise StudyError(f"margin {m!r} ({spec.source}) must be a positive number: the smallest difference in "
                         f"{o.metric} that matters, e.g. margin: 0.05.")
    if bounds is not None and m >= bounds[1] - bounds[0]:
        width = bounds[1] - bounds[0]
        raise StudyError(f"margin {m:g} ({spec.source}) is not smaller than {said}, [{bounds[0]:g}, {bounds[1]:g}] "
                         f"(width {width:g}): no difference could exceed it, so every comparison would end "
                         "equivalent. Use a smaller margin, e.g. margin: 0.05 for a rate.")
    alpha = getattr(spec, "alpha", None)
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1):
        raise StudyError(f"alpha {alpha!r} ({spec.source}) must lie between 0 and 1 (exclusive): the study's error "
                         "rate, e.g. alpha: 0.05.")
    cb = spec.collapse_below
    if cb is None:
        return
    if o.direction == "minimize":
        raise StudyError(f"collapse_below {cb:g} ({spec.source}) counts a seed whose objective ends below it as "
                         f"collapsed, but the objective {o.metric} is minimized: a low value is the good one. Drop "
                         "collapse_below for this objective (or study a maximized one).")
    if bounds is not None and not bounds[0] < cb <= bounds[1]:
        raise StudyError(f"collapse_below {cb:g} ({spec.source}) lies outside {said}, ({bounds[0]:g}, {bounds[1]:g}]: "
                         f"{'no' if cb <= bounds[0] else 'every'} seed would count as collapsed. Give a value inside "
                         "the range, e.g. collapse_below: 0.6 for a draw rate.")
    limit = ALPHA if alpha is None else alpha
    ca = spec.collapse_alpha
    if isinstance(ca, bool) or not isinstance(ca, int | float) or not 0 < ca < limit:
        raise StudyError(f"collapse_alpha {ca!r} ({spec.source}) must lie between 0 and the study's alpha {limit:g} "
                         "(exclusive): the collapse endpoint's share of the error rate, e.g. collapse_alpha: 0.01.")


def _baseline(spec: StudySpec, trials: list[list[str]]) -> None:
    """The baseline is a condition of the grid, spelled as its trials' overrides spell it."""
    from ttt_lab.studies.blocks import split

    if not spec.baseline:
        return
    conditions = sorted({split(t, spec.blocks or [])[0] for t in trials})
    if spec.baseline in conditions and len(conditions) > 1:
        return
    if len(conditions) <= 1:
        raise StudyError(f"baseline '{spec.baseline}' ({spec.source}): this grid has one condition "
                         f"({conditions[0] if conditions else 'none'}), so there is nothing to compare with it. Sweep "
                         "a parameter besides seed (and the blocks), or drop baseline.")
    words = sorted(spec.baseline.lower().split())
    close = [c for c in conditions if sorted(c.lower().split()) == words]
    hint = f" Did you mean '{close[0]}'?" if close else ""
    shown = ", ".join(f"'{c}'" for c in conditions[:SHOWN]) + (", …" if len(conditions) > SHOWN else "")
    raise StudyError(f"baseline '{spec.baseline}' ({spec.source}) is none of the grid's {len(conditions)} conditions "
                     f"({shown}), so no comparison against it could be made.{hint} Name one of them exactly as the "
                     "trials' overrides spell it (baseline: key=value, several keys in the order of params), or "
                     "drop baseline to compare with the best condition.")


def _distinct(plan) -> None:
    """Two grid points composing one config would train the same run twice and count it twice:
    refused for two spellings of a value; a config group's option that changes nothing under the
    study's overrides (an ablation that is already the experiment's setting) is said, not refused."""
    from ttt_lab.config.load import groups

    seen: dict[str, list[str]] = {}
    said: set[str] = set()
    for t in plan.trials:
        if t.config_hash in seen:
            differ = sorted({o.partition("=")[0] for o in set(seen[t.config_hash]) ^ set(t.overrides)})
            if any(k.lstrip("+~") in groups() for k in differ):
                if differ[0] not in said:
                    said.add(differ[0])
                    LOG.warning(f"trials '{' '.join(seen[t.config_hash])}' and '{' '.join(t.overrides)}' "
                                f"({plan.spec.source}) compose the same config: the option of {', '.join(differ)} "
                                "changes nothing under the study's overrides, so these conditions are one run.")
                continue
            raise StudyError(f"trials '{' '.join(seen[t.config_hash])}' and '{' '.join(t.overrides)}' "
                             f"({plan.spec.source}) compose the same config: a swept value changes nothing (another "
                             "override sets the same key, or two spellings of one value), so one run would count "
                             "as two. Sweep each key once, with values that differ.")
        seen[t.config_hash] = t.overrides


def _search_params(plan) -> None:
    """Each searched key names a key of the config, and the ends of its range are values it takes."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import IntervalSweep

    from ttt_lab.studies.grid import values

    spec = plan.spec
    for key, expr in spec.params.items():
        (parsed,) = OverridesParser.create().parse_overrides([f"{key}={expr}"])
        value = parsed.value()
        if isinstance(value, IntervalSweep):
            lo, hi = value.start, value.end
            if lo is None or hi is None or not lo < hi:
                raise StudyError(f"{key}={expr} ({spec.source}) is an empty interval: give interval(low, high) with "
                                 "low < high.")
            if "log" in value.tags and lo <= 0:
                raise StudyError(f"{key}={expr} ({spec.source}) is a log interval starting at {lo:g}: a log scale "
                                 "needs low > 0, e.g. tag(log, interval(1e-5, 1e-3)).")
            samples = [str(lo), str(hi)]
        else:  # choice(), range(), glob() and a,b: the grid's own expansion
            samples = values(key, expr)
        for v in samples:
            try:
                plan.compose([*spec.overrides, f"{key}={v}"])
            except TttLabError as e:
                raise StudyError(f"the searched parameter {key}={v} ({spec.source}): {e}") from None
