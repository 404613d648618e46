"""`ttt-lab runs list`, `runs sync`, `runs export`: the store's runs from `ttt_lab.api`, shown."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from ttt_lab import api
from ttt_lab.errors import TttLabError


def list_runs(overrides: list[str], limit: int, console: Console) -> None:
    found = api.runs(overrides, limit=limit)
    table = Table(title=f"latest runs in {found.tracking_uri}")
    for col in ("run id", "experiment", "name", "started", "status", "params", "metrics"):
        table.add_column(col, overflow="fold")
    for r in found.rows:
        params = " ".join(f"{k}={v}" for k, v in r.params.items())
        metrics = " ".join(f"{k.removeprefix('eval/')}={v:.3f}" for k, v in r.metrics.items())
        table.add_row(r.run_id, r.experiment, r.name, r.started.strftime("%Y-%m-%d %H:%M"), r.status, params, metrics)
    console.print(table if found.rows else f"no runs yet in {found.tracking_uri}; try `ttt-lab eval`")


def sync_runs(overrides: list[str], console: Console) -> None:
    synced = api.sync_runs(overrides)
    for run_id, n in synced.sent:
        console.print(f"run {run_id}: {n} kept sends delivered to {synced.tracking_uri}", highlight=False)
    if not synced.sent:
        console.print("nothing to send: no run left a tracking fallback file", highlight=False)


EXPORT_FORMATS = ("csv", "parquet", "json")


def export_runs(study: str, fmt: str | None, out: str | None, overrides: list[str], console: Console) -> None:
    """`ttt-lab runs export`: the study's trials as a table file (see `ttt_lab.api.export`); the
    format from `--format`, else from `--out`'s suffix, else csv."""
    fmt = _export_format(fmt, out)
    table = api.export(study, overrides=overrides)
    if out == "-":
        sys.stdout.write(table.frame().to_csv(index=False) if fmt == "csv" else table.to_json())
        return
    path = table.write(out or f"{table.study}.{fmt}", fmt)  # type: ignore[arg-type]
    console.print(f"{len(table.rows)} trial(s) of '{table.study}' written to {path}", highlight=False)


def _export_format(fmt: str | None, out: str | None) -> str:
    """The format asked for, checked against `out` before anything is read: a `--out x.parquet`
    written as csv, or over a folder, would be a file nobody can open."""
    from ttt_lab.api._report import export_format

    if fmt is not None and fmt not in EXPORT_FORMATS:
        raise TttLabError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}.")
    if out == "-" and fmt == "parquet":
        raise TttLabError("Parquet is binary: give --out FILE.parquet, or --format csv|json for stdout.")
    return (fmt or "csv") if not out or out == "-" else export_format(out, fmt, default="csv")
