"""Reports and exports of studies through the API, read from the tracking store."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ttt_lab.api._config import load_config
from ttt_lab.errors import TttLabError

if TYPE_CHECKING:
    import pandas as pd

    from ttt_lab.config.schema import Config
    from ttt_lab.report.collect import Study
    from ttt_lab.tracking.store import Store

ExportFormat = Literal["csv", "parquet", "json"]


@dataclass(frozen=True)
class ReportResult:
    study: Study
    """The collected study: its trials (overrides, seed, metrics, run id) and what is partial."""
    paths: list[Path]
    """index.html and report.md first, then the tables and figures beside them."""
    compared: Study | None = None
    """The second study of a comparison."""
    answer: list[str] = field(default_factory=list)
    """The study's answer to its question, one sentence per comparison (empty without decisions)."""

    @property
    def index(self) -> Path:
        return self.paths[0]


def _store(overrides: Sequence[str] | None) -> tuple[Config, Store]:
    from ttt_lab.tracking.store import open_store

    cfg = load_config(overrides).cfg
    return cfg, open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)


REPORT_FILES = (".json", ".csv", ".md", ".html")


def report(study: str, *, out: str | os.PathLike[str] | None = None, overrides: Sequence[str] | None = None,
           compare: str | None = None, trust_code: bool = False) -> ReportResult:
    """Write a study's report (`ttt-lab report`): index.html and report.md under runs/reports/STUDY
    (or `out`), its files also logged on the study's parent run (under report/) and its answer
    written there (`ttt_lab.report.tracked`: the run's description, a tag per comparison, a run per
    condition with its aggregates); with `compare`, both studies side by side. `overrides` say where the store is."""
    from ttt_lab.names import under
    from ttt_lab.report.collect import collect
    from ttt_lab.report.decisions import sentences
    from ttt_lab.report.render import build, build_compare, write

    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise TttLabError(f"the report's --out {out} is a file: a report is a folder (index.html, report.md, "
                          "figures/); give a folder's path, new or existing.")
    cfg, store = _store(overrides)
    data = collect(store, study)
    if compare is not None:
        other = collect(store, compare)
        folder = Path(out) if out else under(cfg.home, "reports", f"{data.name}-vs-{other.name}")
        return ReportResult(data, write(build_compare(data, other, cfg.report.stability), folder), other)
    folder = Path(out) if out else under(cfg.home, "reports", data.name)
    built = build(data, c=cfg.report.stability, trust_code=trust_code)
    paths = write(built, folder)
    for p in paths:
        if p.suffix in REPORT_FILES:
            store.client.log_artifact(data.parent_id, str(p), "report")
    if built.answer is not None:  # the answer on the parent run too, where MLflow users look
        from ttt_lab.report.tracked import record

        record(store, data.parent_id, built.answer)
    return ReportResult(data, paths, None, list(sentences(built.answer)) if built.answer is not None else [])


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
        kind = export_format(target, fmt)
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


def export_format(path: str | os.PathLike[str], fmt: str | None = None, default: str | None = None) -> str:
    """The format of an export to `path`: `fmt`, else its suffix's, else `default`; `TttLabError`
    when none names one, when `fmt` and a format's suffix disagree, or when `path` is a folder."""
    target = Path(path)
    suffix = target.suffix.lstrip(".").lower()
    known = suffix if suffix in ("csv", "parquet", "json") else None
    if fmt and known and known != fmt:
        raise TttLabError(f"--format {fmt} and --out {target} disagree: name the file .{fmt}, or drop --format "
                          f"to write {known} as its name says.")
    kind = fmt or known or default
    if kind not in ("csv", "parquet", "json"):
        raise TttLabError(f"cannot tell the export format of {target}: use a .csv, .parquet or .json file name, "
                          "or --format csv|parquet|json.")
    if target.is_dir():
        raise TttLabError(f"--out {target} is a folder: give a file name inside it, e.g. "
                          f"--out {target / ('STUDY.' + kind)}.")
    return kind


def export(study: str, *, overrides: Sequence[str] | None = None) -> Export:
    """Every trial of a study (by name or parent run id) from the tracking store: overrides, seed,
    final metrics, config hash and run id, failed and unfinished trials included."""
    from ttt_lab.report.collect import study_trials
    from ttt_lab.tracking import keys

    _, store = _store(overrides)
    name, parent, trials = study_trials(store, study, with_curves=False)
    rows = [TrialRow(name, t.number, t.run_id, t.status, t.state, " ".join(t.overrides), t.condition, t.seed,
                     t.tags.get(keys.CONFIG_HASH, ""), dict(sorted(t.metrics.items()))) for t in trials]
    return Export(name, parent.info.run_id, rows)
