"""ttt-lab's Python API: what the CLI's commands do, returning data instead of printing it.

    from ttt_lab import api

    cfg = api.load_config(["experiment=smoke"])
    result = api.train(cfg)                      # TrainResult: checkpoint, run id, final rates
    print(result.metrics["final/optimal/draw_rate"])
    table = api.export("quickstart").frame()     # one row per trial, a pandas DataFrame

Every function runs without a terminal: progress goes to the `ttt_lab` logger, printed only where
the caller configures `logging` (`logging.basicConfig(level=logging.INFO)`); each function
raises `ttt_lab.errors.TttLabError` (one paragraph naming the problem and the fix) for bad input. Heavy
libraries (torch, TRL, MLflow, Optuna) are imported by the function that needs them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ttt_lab.config.load import Loaded, using_config_dirs
from ttt_lab.errors import TttLabError

if TYPE_CHECKING:
    import pandas as pd

    from ttt_lab.audit.checks import Audit
    from ttt_lab.config.schema import Config
    from ttt_lab.evaluation.suite import SuiteResult
    from ttt_lab.evaluation.summary import Paired, Summary
    from ttt_lab.report.collect import Study
    from ttt_lab.tracking.store import Store

ConfigLike = Loaded | Sequence[str] | None
"""A loaded config, or the overrides to load one with (None: the defaults)."""
AuditKind = Literal["opponent", "dataset", "policy"]
ExportFormat = Literal["csv", "parquet", "json"]


def load_config(overrides: Sequence[str] | None = None, *,
                config_dirs: Sequence[str | os.PathLike[str]] | None = None) -> Loaded:
    """The composed, validated configuration for these overrides (as on the command line:
    `["experiment=smoke", "batch_size=16"]`), with the user's config folders added to the shipped
    ones. `.cfg` is the typed config, `.tree` the plain resolved one, `.config_hash` its hash."""
    from ttt_lab.config.load import load

    with using_config_dirs(config_dirs):
        return load(list(overrides or []))


def _loaded(cfg: ConfigLike) -> Loaded:
    if isinstance(cfg, Loaded):
        return cfg
    if isinstance(cfg, str):
        raise TttLabError(f"a config must be a list of overrides, not the string {cfg!r}: write [{cfg!r}], or pass "
                          "ttt_lab.api.load_config(...)'s result.")
    return load_config(cfg)


def config_diff(cfg: ConfigLike) -> dict[str, tuple[Any, Any]]:
    """The keys whose value differs from the defaults: key -> (default, value); values read from the
    environment show as ***."""
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.config.load import defaults_tree

    loaded = _loaded(cfg)
    base, now = flat_items(defaults_tree()), flat_items(loaded.logged_tree)
    missing = "<absent>"
    return {k: (base.get(k, missing), now.get(k, missing)) for k in sorted(set(base) | set(now))
            if base.get(k, missing) != now.get(k, missing)}


@dataclass(frozen=True)
class TrainResult:
    checkpoint: Path
    """The final policy checkpoint (a transformers model folder)."""
    run_id: str | None
    """The MLflow run (None with tracking.enabled=false)."""
    final: list[Summary]
    """The final policy against each evaluation opponent (rates with 95 % intervals)."""
    sft: list[Summary] | None
    """The warm-up checkpoint on the same games (None without SFT)."""
    gains: list[Paired]
    """Final against warm-up, game by game, per opponent."""
    seconds: float
    config_hash: str

    @property
    def metrics(self) -> dict[str, float]:
        """Flat metrics: `final/<opponent>/draw_rate`, `sft/<opponent>/…`, `gain/<opponent>/p_value`."""
        out: dict[str, float] = {}
        for s in self.final:
            out.update(s.metrics("final"))
        for s in self.sft or []:
            out.update(s.metrics("sft"))
        for g in self.gains:
            out.update(g.metrics("gain"))
        return out


def train(cfg: ConfigLike = None, *, fresh: bool = False) -> TrainResult:
    """Train (SFT warm-up, then the RL phases); the same config resumes where it stopped, `fresh`
    starts over. One process: for train.processes > 1 use `ttt-lab train` (it starts the processes)
    or call this in each process of a `torchrun`/`accelerate launch`. Progress goes to the
    `ttt_lab` logger (`logging.basicConfig(level=logging.INFO)` shows it)."""
    from ttt_lab.train import distributed
    from ttt_lab.train.pipeline import train as run_pipeline

    loaded = _loaded(cfg)
    n = loaded.cfg.train.processes
    if n > 1 and distributed.world_size() <= 1:
        raise TttLabError(f"train.processes={n} needs {n} processes: run `ttt-lab train` with these overrides (it "
                          "starts them), or call ttt_lab.train in each process of torchrun / accelerate launch; in "
                          "this process pass train.processes=1.")
    out = run_pipeline(loaded, fresh=fresh)
    return TrainResult(out.checkpoint, out.run_id, list(out.final), out.sft, list(out.gains), out.seconds,
                       loaded.config_hash)


@dataclass(frozen=True)
class EvalResult:
    results: list[SuiteResult]
    """One per suite opponent: its games and their summary."""
    run_id: str | None
    transcript: Path | None
    seconds: float
    player: str
    config_hash: str

    @property
    def summaries(self) -> list[Summary]:
        return [r.summary for r in self.results]

    @property
    def metrics(self) -> dict[str, float]:
        """Flat metrics as logged: `eval/<opponent>/draw_rate`, …"""
        out: dict[str, float] = {}
        for r in self.results:
            out.update(r.summary.metrics())
        return out


def evaluate(cfg: ConfigLike = None) -> EvalResult:
    """Play the configured player against the evaluation suite (`ttt-lab eval`)."""
    from ttt_lab.evaluation.run import run_eval
    from ttt_lab.players.factory import build_player

    loaded = _loaded(cfg)
    player = build_player(loaded.cfg)
    out = run_eval(loaded, player)
    return EvalResult(list(out.results), out.run_id, out.transcript, out.play_seconds, repr(player),
                      loaded.config_hash)


@dataclass(frozen=True)
class AuditResult:
    audit: Audit
    """Its checks (name, status PASS/WARN/FAIL/SKIP, value, detail) and data."""
    paths: list[Path]
    """audit.json, audit.md, audit.html."""
    run_id: str | None
    experiment: str
    """The MLflow experiment of `run_id`."""

    @property
    def status(self) -> str:
        return self.audit.status

    @property
    def failed(self) -> list[str]:
        from ttt_lab.audit.checks import FAIL

        return [c.name for c in self.audit.checks if c.status == FAIL]


def audit(kind: AuditKind, cfg: ConfigLike = None, *, file: str | os.PathLike[str] | None = None) -> AuditResult:
    """Bias audit of the configured opponent, training dataset (or a saved dataset.jsonl, `file`)
    or policy; writes audit.json/.md/.html under audit.out and, when tracking is on, an MLflow run."""
    from ttt_lab.audit import output
    from ttt_lab.audit.run import KINDS, run_kind, tracking_job
    from ttt_lab.config.load import config_hash

    if kind not in KINDS:
        raise TttLabError(f"Unknown audit '{kind}'. Choose one of: {', '.join(KINDS)} "
                          "(e.g. `ttt-lab audit opponent tie_break=first`).")
    if file is not None and kind != "dataset":
        raise TttLabError("--file only applies to `ttt-lab audit dataset` (a saved dataset.jsonl).")
    loaded = _loaded(cfg)
    logger = None
    if loaded.cfg.tracking.enabled:
        from ttt_lab.tracking.background import BackgroundLogger

        logger = BackgroundLogger(loaded.cfg.tracking.uri, loaded.cfg.tracking.artifacts)
    try:
        found = run_kind(kind, loaded, Path(file) if file is not None else None)
    except BaseException:
        if logger is not None:
            logger.cancel()
        raise
    folder = Path(loaded.cfg.audit.out) / f"{kind}-{config_hash({'all': loaded.tree})}"
    paths = output.write(found, folder)
    run_id = logger.log(tracking_job(loaded, found, paths)) if logger is not None else None
    return AuditResult(found, list(paths), run_id, loaded.cfg.tracking.experiment)


@dataclass(frozen=True)
class SweepResult:
    name: str
    parent_run_id: str | None
    """The study's MLflow parent run (None for a dry run)."""
    finished: int
    failed: int
    pruned: int
    unfinished: int

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unfinished


def sweep(study: str | os.PathLike[str] | None = None, overrides: Sequence[str] = (), *, dry_run: bool = False,
          workers: int | None = None, storage: str | None = None, max_failures: int | None = None,
          name: str | None = None, trials: int | None = None, trial_timeout: float | None = None) -> SweepResult:
    """Run a study on this machine: a named study (`"quickstart"`), a study file, or (study=None)
    a grid or search given by the overrides alone (`["batch_size=8,16", "experiment=smoke"]`).
    Re-running skips finished trials, as `ttt-lab sweep` does."""
    from ttt_lab.studies.named import study_path
    from ttt_lab.studies.runner import run_study
    from ttt_lab.studies.spec import from_args, from_file
    from ttt_lab.tracking.provenance import command_line

    args = list(overrides)

    def is_launcher_setting(arg: str) -> bool:
        return arg.lstrip("+~").startswith("launcher.")

    if any(is_launcher_setting(a) for a in args):
        raise TttLabError("launcher.* settings run a study on SLURM: use `ttt-lab sweep --launcher slurm`; the API "
                          "runs the workers on this machine.")
    spec = from_file(study_path(Path(study)), args, name, trials) if study is not None else from_args(args, name,
                                                                                                         trials)
    if any(is_launcher_setting(o) for o in spec.overrides):
        raise TttLabError(f"the study {study} sets launcher.* overrides (it is meant for SLURM): run it with "
                          "`ttt-lab sweep --launcher slurm`.")
    out = run_study(spec, workers=workers, storage=storage, max_failures=max_failures,
                    dry_run=dry_run, command=command_line(), trial_timeout=trial_timeout)
    return SweepResult(out.name, out.parent_run_id, out.finished, out.failed, out.pruned, out.unfinished)


@dataclass(frozen=True)
class ReportResult:
    study: Study
    """The collected study: its trials (overrides, seed, metrics, run id) and what is partial."""
    paths: list[Path]
    """index.html and report.md."""

    @property
    def index(self) -> Path:
        return self.paths[0]


def _store(overrides: Sequence[str] | None) -> tuple[Config, Store]:
    from ttt_lab.tracking.store import open_store

    cfg = load_config(overrides).cfg
    return cfg, open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)


def report(study: str, *, out: str | os.PathLike[str] | None = None, overrides: Sequence[str] | None = None,
           compare: str | None = None, trust_code: bool = False) -> ReportResult:
    """Write a study's report (`ttt-lab report`): index.html and report.md under runs/reports/STUDY
    (or `out`); with `compare`, both studies side by side. `overrides` say where the store is."""
    from ttt_lab.names import under
    from ttt_lab.report.collect import collect
    from ttt_lab.report.render import build, build_compare, write

    cfg, store = _store(overrides)
    data = collect(store, study)
    if compare is not None:
        other = collect(store, compare)
        folder = Path(out) if out else under(cfg.home, "reports", f"{data.name}-vs-{other.name}")
        return ReportResult(data, write(build_compare(data, other, cfg.report.stability), folder))
    folder = Path(out) if out else under(cfg.home, "reports", data.name)
    return ReportResult(data, write(build(data, c=cfg.report.stability, trust_code=trust_code), folder))


@dataclass(frozen=True)
class TrialRow:
    """One trial of a study as exported: what ran, with which seed, and how it ended."""
    study: str
    trial: int
    run_id: str
    status: str
    """MLflow's run status (FINISHED, FAILED, RUNNING, KILLED)."""
    state: str
    """Optuna's trial state (COMPLETE, FAIL, PRUNED, RUNNING)."""
    overrides: str
    """The trial's own overrides, space-separated (`batch_size=8 seed=1`)."""
    condition: str
    """The overrides without the seed: trials of one condition differ only by seed."""
    seed: int
    config_hash: str
    metrics: dict[str, float] = field(default_factory=dict)
    """Final values of every metric of the run (`eval/optimal/draw_rate`, …)."""

    def flat(self) -> dict[str, Any]:
        row: dict[str, Any] = {k: v for k, v in self.__dict__.items() if k != "metrics"}
        row.update(self.metrics)
        return row


@dataclass(frozen=True)
class Export:
    study: str
    parent_run_id: str
    rows: list[TrialRow]

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per trial: the fields, then one column per metric."""
        return [r.flat() for r in self.rows]

    def frame(self) -> pd.DataFrame:
        """A pandas DataFrame, one row per trial."""
        import pandas as pd

        columns = [f for f in TrialRow.__dataclass_fields__ if f != "metrics"]
        metrics = sorted({k for r in self.rows for k in r.metrics})
        return pd.DataFrame(self.records(), columns=[*columns, *metrics])

    def to_json(self) -> str:
        """The records as a JSON array (a metric a trial lacks is absent; a non-finite one is null)."""
        import json
        import math

        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and not math.isfinite(v) else v

        return json.dumps([{k: clean(v) for k, v in r.items()} for r in self.records()], indent=1) + "\n"

    def write(self, path: str | os.PathLike[str], fmt: ExportFormat | None = None) -> Path:
        """Write as csv, parquet or json (from the suffix when `fmt` is None); atomically."""
        from ttt_lab import atomic

        target = Path(path)
        kind = fmt or target.suffix.lstrip(".").lower()
        if kind not in ("csv", "parquet", "json"):
            raise TttLabError(f"cannot tell the export format of {target}: use a .csv, .parquet or .json file name, "
                              "or --format csv|parquet|json.")
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "csv":
            atomic.write_text(target, self.frame().to_csv(index=False))
        elif kind == "json":
            atomic.write_text(target, self.to_json())
        else:
            tmp = target.with_name(f".{target.name}.tmp")
            self.frame().to_parquet(tmp, index=False)
            os.replace(tmp, target)
        return target


def export(study: str, *, overrides: Sequence[str] | None = None) -> Export:
    """Every trial of a study (by name or parent run id) from the tracking store: overrides, seed,
    final metrics, config hash and run id, failed and unfinished trials included."""
    from ttt_lab.report.collect import trial_from_run
    from ttt_lab.tracking import keys
    from ttt_lab.tracking.store import child_runs, experiment_name, find_parent

    _, store = _store(overrides)
    parent = find_parent(store, study)
    if parent is None:
        raise TttLabError(f"no study '{study}' in the tracking store ({store.uri}): give a study name (the MLflow "
                          "experiment a `ttt-lab sweep` made) or its parent run id, with --set tracking.… for another "
                          "store; `ttt-lab runs list` shows runs.")
    name = experiment_name(store, parent.info.experiment_id)
    trials = sorted((trial_from_run(r, False, store) for r in child_runs(store, name, parent.info.run_id)),
                    key=lambda t: t.number)
    rows = [TrialRow(name, t.number, t.run_id, t.status, t.state, " ".join(t.overrides), t.condition, t.seed,
                     t.tags.get(keys.CONFIG_HASH, ""), dict(sorted(t.metrics.items()))) for t in trials]
    return Export(name, parent.info.run_id, rows)
