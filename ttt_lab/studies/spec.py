"""A study: fixed overrides, the swept parameters (Hydra sweep syntax), objectives, and for
searches the sampler, pruner and number of trials. From a command line or `sweeps/*.yaml`."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ttt_lab.errors import TttLabError

SAMPLERS = {"tpe": ("seed", "n_startup_trials", "multivariate", "constant_liar"), "random": ("seed",),
            "grid": ("seed",)}
PRUNERS = {"none": (), "median": ("n_startup_trials", "n_warmup_steps"),
           "halving": ("min_resource", "reduction_factor"), "threshold": ("lower", "upper", "n_warmup_steps")}
"""Each sampler and pruner with the settings it takes (anything else is a typo, refused)."""
DIRECTIONS = ("maximize", "minimize")
DEFAULT_METRIC = "eval/optimal/draw_rate"
DEFAULT_MARGIN = 0.05
"""The smallest difference that matters unless a study says otherwise: five points of a rate."""


class StudyError(TttLabError):
    pass


@dataclass
class Objective:
    metric: str = DEFAULT_METRIC
    """A final metric of the trial's run, e.g. eval/optimal/draw_rate or eval/random/win_rate."""
    direction: str = "maximize"
    custom: bool = False
    """A metric of the user's own (`custom: true`): not checked against the metrics a trial logs
    (`ttt_lab.evaluation.metric_names`)."""


@dataclass
class StudySpec:
    name: str
    params: dict[str, str]
    """Key -> Hydra sweep expression: `64,128`, `range(0,3)`, `choice(a,b)`, `interval(1e-5,1e-3)`,
    `tag(log, interval(1e-5,1e-3))`, `glob(minimax*)`."""
    overrides: list[str] = field(default_factory=list)
    question: str = ""
    kind: str = "grid"
    n_trials: int | None = None
    sampler: dict[str, Any] = field(default_factory=lambda: {"name": "tpe", "seed": 0})
    pruner: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    objectives: list[Objective] = field(default_factory=lambda: [Objective()])
    workers: int = 1
    source: str = "command line"
    baseline: str = ""
    """The condition the report compares every other one with (e.g. `ablation=none`); empty:
    the best condition on the objective."""
    margin: float = DEFAULT_MARGIN
    """The smallest difference that matters, in the objective's units: two conditions whose
    difference's interval lies inside ±margin are equivalent."""
    max_seeds: int | None = None
    """`--until-settled`: the most seeds per condition it may run (default: four times the study's)."""
    decisions: str = "anytime"
    """How comparisons are decided: `anytime` (valid at any seed count, budget raises included) or
    `fixed` (exact tests at looks declared before the first trial; a later raise is refused)."""
    looks: list[int] | None = None
    """`fixed`: the seeds per condition at each look (default: the study's seeds, then as many more
    at a time up to max_seeds)."""
    bounds: list[float] | None = None
    """The range the objective can take (default: [0, 1] for rates and exploitability)."""
    collapse_below: float | None = None
    """A second endpoint, declared before the first trial: a seed whose objective ends below this
    collapsed; the report compares the arms' collapse rates."""
    collapse_alpha: float = 0.01
    """The collapse endpoint's share of the study's alpha (the objective keeps the rest)."""
    mean_alpha: float = 0.01
    """The mean difference's share of the study's alpha; the probability of improvement, the
    primary endpoint, keeps what the mean and the collapse endpoint do not take."""
    delta: float = 0.0
    """The probability of improvement's equivalence margin: with delta > 0 a comparison can end
    "equivalent" (neither better on more than 1/2 + delta of seeds); 0: no equivalence decision."""
    default_seeds: bool = False
    """The seeds (and, with one swept key, the baseline) were chosen by `from_args`, not named."""
    blocks: list[str] | None = None
    """Swept keys whose values repeat the whole comparison (e.g. train.sft.seed: a second warm-up):
    conditions are paired within a block and each block is also decided on its own."""

    def key(self) -> str:
        """Identity of the study's definition (not its name, where it came from, or how it is reported)."""
        d = asdict(self)
        for k in ("name", "source", "workers", "question", "baseline", "margin", "max_seeds", "decisions", "looks",
                  "bounds", "collapse_below", "collapse_alpha", "blocks", "mean_alpha", "delta",
                  "default_seeds"):
            d.pop(k)
        for o in d["objectives"]:  # declaring a name custom changes what is checked, not what runs
            o.pop("custom", None)
        if "seed" in d["params"]:  # seeds added until the answer is known keep the study's identity
            d["params"]["seed"] = "*"
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    def _validate_margin(self) -> None:
        check_margin(self.margin, self.objectives[0].metric, self.source)

    def validate(self) -> StudySpec:
        from ttt_lab.names import check_name

        try:
            check_name("study name", self.name)
        except TttLabError as e:
            raise StudyError(f"{e} Give the study another name (--name or the file's name:).") from None
        if self.kind not in ("grid", "search"):
            raise StudyError(f"study kind {self.kind!r} is not one of grid, search.")
        if self.kind == "search" and (not isinstance(self.n_trials, int) or self.n_trials < 1):
            raise StudyError(f"The search '{self.name}' needs n_trials (a positive integer), e.g. n_trials: 20 in "
                             "its YAML or --trials 20 on the command line.")
        _check_settings("sampler", self.sampler, SAMPLERS)
        _check_settings("pruner", self.pruner, PRUNERS)
        if not self.objectives:
            raise StudyError("a study needs at least one objective (metric and direction).")
        self._validate_margin()
        for o in self.objectives:
            if o.direction not in DIRECTIONS:
                raise StudyError(f"objective direction {o.direction!r} for {o.metric} is not maximize or minimize.")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise StudyError(f"workers must be a positive whole number, not {self.workers!r}.")
        if self.max_seeds is not None and (isinstance(self.max_seeds, bool) or not isinstance(self.max_seeds, int)
                                           or self.max_seeds < 2):
            raise StudyError(f"max_seeds {self.max_seeds!r} ({self.source}) must be a whole number of at least 2.")
        self._validate_decisions()
        if self.pruner["name"] != "none" and len(self.objectives) > 1:
            raise StudyError("pruning needs a single objective; Optuna cannot prune multi-objective studies.")
        return self

    def _validate_alpha_split(self) -> None:
        """The endpoints' shares of the study's 5 % error rate leave the primary endpoint a share."""
        m, d = self.mean_alpha, self.delta
        if not _number(m) or not 0 < m < 0.05:
            raise StudyError(f"mean_alpha {m!r} ({self.source}) must lie between 0 and 0.05 (exclusive): the mean "
                             "difference's share of the study's 5 % error rate, e.g. mean_alpha: 0.01.")
        left = 0.05 - m - (self.collapse_alpha if self.collapse_below is not None else 0.0)
        if left <= 0.005:
            raise StudyError(f"mean_alpha {m:g} and collapse_alpha {self.collapse_alpha:g} ({self.source}) leave "
                             f"the probability of improvement, the primary endpoint, {max(left, 0):.3g} of the "
                             "study's 0.05; give it at least 0.005 (e.g. mean_alpha: 0.01, collapse_alpha: 0.01).")
        if not _number(d) or not 0 <= d < 0.5:
            raise StudyError(f"delta {d!r} ({self.source}) must lie in [0, 0.5): the probability of improvement's "
                             "equivalence margin (\"equivalent\" means neither arm better on more than 1/2 + delta of "
                             "seeds), e.g. delta: 0.2; 0 declares no equivalence decision.")


    def _validate_decisions(self) -> None:
        from ttt_lab.stats.design import PROCEDURES

        if self.decisions not in PROCEDURES:
            raise StudyError(f"decisions {self.decisions!r} ({self.source}) is not one of {', '.join(PROCEDURES)}: "
                             "`anytime` decides validly at any number of seeds, `fixed` at looks declared up front.")
        looks = self.looks
        bad = looks is not None and (not looks or sorted(set(looks)) != looks or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in looks))
        if bad:
            raise StudyError(f"looks {looks!r} ({self.source}) must be increasing whole numbers of seeds, each at "
                             "least 2, e.g. looks: [6, 9, 12].")
        if looks is not None and self.decisions != "fixed":
            raise StudyError(f"looks ({self.source}) are declared for `decisions: fixed`; `anytime` looks after every "
                             "seed. Add decisions: fixed, or drop looks.")
        b = self.bounds
        if b is not None and not (len(b) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool)
                                                      and math.isfinite(v) for v in b) and b[0] < b[1]):
            raise StudyError(f"bounds {b!r} ({self.source}) must be [low, high] with low < high: the range the "
                             f"objective {self.objectives[0].metric} can take, e.g. bounds: [0, 1] for a rate.")
        for key in self.blocks or []:
            if not isinstance(key, str) or key == "seed" or key not in self.params:
                raise StudyError(f"blocks entry {key!r} ({self.source}) is not one of the study's swept keys other "
                                 f"than seed ({', '.join(k for k in self.params if k != 'seed') or 'none'}); a block "
                                 "is a swept key whose values repeat the comparison, e.g. train.sft.seed: 0,1.")
        cb, ca = self.collapse_below, self.collapse_alpha
        if cb is not None and (isinstance(cb, bool) or not isinstance(cb, int | float) or not math.isfinite(cb)):
            raise StudyError(f"collapse_below {cb!r} ({self.source}) must be a number: the objective's value below "
                             "which a seed counts as collapsed, e.g. collapse_below: 0.6.")
        if isinstance(ca, bool) or not isinstance(ca, int | float) or not 0 < ca < 0.05:
            raise StudyError(f"collapse_alpha {ca!r} ({self.source}) must lie between 0 and 0.05 (exclusive): the "
                             "collapse endpoint's share of the study's 5 % error rate, e.g. collapse_alpha: 0.01.")
        self._validate_alpha_split()
        if b is not None and self.margin >= b[1] - b[0]:
            raise StudyError(f"margin {self.margin:g} ({self.source}) is not smaller than the objective's range "
                             f"{b[1] - b[0]:g} (bounds {b}): no difference could exceed it. Use a smaller margin.")


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def check_margin(margin: object, metric: str, where: str) -> None:
    rate = metric.endswith("_rate")
    ok = isinstance(margin, int | float) and not isinstance(margin, bool) and 0 < margin < (1 if rate else math.inf)
    if not ok:
        limit = "between 0 and 1 (exclusive) for a rate such as " + metric if rate else "above 0"
        raise StudyError(f"margin {margin!r} ({where}) is not a usable smallest difference that matters: it must be "
                         f"{limit}, in the objective's units (e.g. margin: 0.05 for five points of a rate; "
                         f"default {DEFAULT_MARGIN}).")


def _check_settings(kind: str, given: dict[str, Any], known: dict[str, tuple[str, ...]]) -> None:
    name = given.get("name")
    if not isinstance(name, str) or name not in known:
        raise StudyError(f"{kind} {name!r} is not one of {', '.join(known)}.")
    unknown = sorted(set(given) - {"name", *known[name]})
    if unknown:
        takes = ", ".join(known[name]) or "no settings"
        raise StudyError(f"the {name} {kind} has no setting {', '.join(unknown)} (it takes: {takes}). Fix the "
                         f"{kind} entry of the study.")


def _is_sweep(override: str) -> bool:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        (parsed,) = OverridesParser.create().parse_overrides([override])
    except Exception as e:  # Hydra raises its own grammar errors
        raise StudyError(f"cannot parse the override {override!r}: {str(e).splitlines()[0]}. Sweeps use Hydra's "
                         "syntax: key=a,b,c, key=range(0,3), key=choice(a,b), key=interval(0.1,1.0).") from None
    return parsed.is_sweep_override()


def from_args(args: list[str], name: str | None = None, n_trials: int | None = None) -> StudySpec:
    params: dict[str, str] = {}
    fixed: list[str] = []
    for a in args:
        if "=" in a and _is_sweep(a):
            key, _, value = a.partition("=")
            params[key] = value
        else:
            fixed.append(a)
    if not params:
        raise StudyError("Nothing to sweep: give at least one key with several values, e.g. "
                         "`ttt-lab sweep batch_size=64,128,256,512`, or a study file such as sweeps/quickstart.yaml.")
    interval = any("interval(" in v for v in params.values())
    spec = StudySpec(name or "", params, fixed, kind="search" if interval or n_trials else "grid", n_trials=n_trials)
    spec.name = name or f"sweep-{spec.key()}"
    return spec.validate()


FILE_KEYS: dict[str, type | tuple[type, ...]] = {
             "name": str, "question": str, "params": dict, "overrides": list, "kind": str, "n_trials": int,
             "sampler": dict, "pruner": dict, "objective": (dict, list), "workers": int, "baseline": str,
             "margin": (float, int), "max_seeds": int, "decisions": str, "looks": list, "bounds": list,
             "collapse_below": (float, int), "collapse_alpha": float, "blocks": list, "mean_alpha": (float, int),
             "delta": (float, int)}
"""The keys of a study file and the YAML shape each must have."""
SHAPE_NAMES = {str: "string", int: "whole number", float: "number", dict: "mapping", list: "list"}


def _read_file(path: Path) -> dict[str, Any]:
    """The study file as a mapping whose values have the shapes of FILE_KEYS."""
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except (OSError, OmegaConfBaseException, yaml.YAMLError, ValueError) as e:
        raise StudyError(f"cannot read the study file {path}: {' '.join(str(e).split())}. It is YAML with name, "
                         "params and optionally overrides, objective, kind, n_trials, sampler, pruner (see sweeps/).") \
            from None
    if not isinstance(raw, dict) or not isinstance(raw.get("params"), dict) or not raw["params"]:
        raise StudyError(f"the study file {path} needs a non-empty `params:` mapping of key -> sweep values.")
    unknown = set(map(str, raw)) - set(FILE_KEYS)
    if unknown:
        raise StudyError(f"unknown keys in {path}: {', '.join(sorted(unknown))}. "
                         f"Allowed: {', '.join(sorted(FILE_KEYS))}.")
    for key, shape in FILE_KEYS.items():
        value = raw.get(key)
        if value is not None and (not isinstance(value, shape) or (isinstance(value, bool) and shape is int)):
            names = " or ".join(SHAPE_NAMES[t] for t in (shape if isinstance(shape, tuple) else (shape,)))
            raise StudyError(f"`{key}` in {path} must be a {names}, not {value!r}.")
    objectives = raw.get("objective") or []
    for o in objectives if isinstance(objectives, list) else [objectives]:
        if not isinstance(o, dict) or not set(o) <= {"metric", "direction", "custom"} or not all(
                isinstance(v, bool) if k == "custom" else isinstance(v, str) for k, v in o.items()):
            raise StudyError(f"each objective in {path} is a mapping with metric and direction (and custom: true "
                             f"for a metric of your own), not {o!r}.")
    if not all(isinstance(o, str) for o in raw.get("overrides") or []):
        raise StudyError(f"`overrides` in {path} is a list of key=value strings, not {raw['overrides']!r}.")
    return {str(k): v for k, v in raw.items()}


def from_file(path: Path, extra: list[str], name: str | None = None, n_trials: int | None = None) -> StudySpec:
    raw = _read_file(path)
    objectives = raw.get("objective") or []
    objectives = [Objective(**o) for o in (objectives if isinstance(objectives, list) else [objectives])]
    more = from_args(extra, name="x").params if any("=" in a and _is_sweep(a) for a in extra) else {}
    fixed = [a for a in extra if not ("=" in a and _is_sweep(a))]
    params = {str(k): _expr(v) for k, v in raw["params"].items()} | more
    kind = raw.get("kind") or ("search" if any("interval(" in v for v in params.values()) else "grid")
    spec = StudySpec(
        name=name or raw.get("name") or path.stem, params=params, overrides=[*(raw.get("overrides") or []), *fixed],
        question=raw.get("question") or "", kind=kind,
        n_trials=n_trials if n_trials is not None else raw.get("n_trials"),
        sampler={"name": "tpe", "seed": 0} | (raw.get("sampler") or {}),
        pruner={"name": "none"} | (raw.get("pruner") or {}), objectives=objectives or [Objective()],
        workers=1 if raw.get("workers") is None else raw["workers"], source=str(path),
        baseline=raw.get("baseline") or "",
        margin=raw.get("margin", DEFAULT_MARGIN), max_seeds=raw.get("max_seeds"),
        decisions=raw.get("decisions") or "anytime", looks=raw.get("looks"), bounds=raw.get("bounds"),
        collapse_below=raw.get("collapse_below"), collapse_alpha=raw.get("collapse_alpha", 0.01),
        blocks=raw.get("blocks"), mean_alpha=raw.get("mean_alpha", 0.01), delta=raw.get("delta", 0.0))
    return spec.validate()


def _expr(v: Any) -> str:
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return str(v)
