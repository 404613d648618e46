"""`ttt-lab runs list`, `runs sync`, `runs export`."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table

from ttt_lab.config.load import load

KEY_PARAMS = ("player.kind", "player.policy", "eval.suite", "seed")
KEY_METRICS = ("eval/optimal/draw_rate", "eval/optimal/loss_rate", "eval/random/win_rate")


def list_runs(overrides: list[str], limit: int, console: Console) -> None:
    from ttt_lab.tracking.store import open_store

    cfg = load(overrides).cfg
    store = open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
    exps = {e.experiment_id: e.name for e in store.client.search_experiments()}
    runs = store.client.search_runs(list(exps), max_results=limit, order_by=["attributes.start_time DESC"])
    table = Table(title=f"latest runs in {cfg.tracking.uri}")
    for col in ("run id", "experiment", "name", "started", "status", "params", "metrics"):
        table.add_column(col, overflow="fold")
    for r in runs:
        started = datetime.fromtimestamp(r.info.start_time / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        params = " ".join(f"{k}={r.data.params[k]}" for k in KEY_PARAMS if k in r.data.params)
        metrics = " ".join(f"{k.removeprefix('eval/')}={r.data.metrics[k]:.3f}" for k in KEY_METRICS
                           if k in r.data.metrics)
        table.add_row(r.info.run_id, exps.get(r.info.experiment_id, "?"), r.info.run_name or "", started,
                      r.info.status, params, metrics)
    console.print(table if runs else f"no runs yet in {cfg.tracking.uri}; try `ttt-lab eval`")


def sync_runs(overrides: list[str], console: Console) -> None:
    from ttt_lab.tracking.runs import sync_fallbacks
    from ttt_lab.tracking.store import open_store

    cfg = load(overrides).cfg
    sent = sync_fallbacks(open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s))
    for run_id, n in sent:
        console.print(f"run {run_id}: {n} kept sends delivered to {cfg.tracking.uri}", highlight=False)
    if not sent:
        console.print("nothing to send: no run left a tracking fallback file", highlight=False)


EXPORT_FORMATS = ("csv", "parquet", "json")


def export_runs(study: str, fmt: str, out: str | None, overrides: list[str], console: Console) -> None:
    """`ttt-lab runs export`: the study's trials as a table file (see `ttt_lab.api.export`)."""
    import sys

    from ttt_lab.api import export
    from ttt_lab.errors import TttLabError

    if fmt not in EXPORT_FORMATS:
        raise TttLabError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}.")
    if out == "-" and fmt == "parquet":
        raise TttLabError("Parquet is binary: give --out FILE.parquet, or --format csv|json for stdout.")
    table = export(study, overrides=overrides)
    if out == "-":
        sys.stdout.write(table.frame().to_csv(index=False) if fmt == "csv" else table.to_json())
        return
    path = table.write(out or f"{table.study}.{fmt}", fmt)  # type: ignore[arg-type]
    console.print(f"{len(table.rows)} trial(s) of '{table.study}' written to {path}", highlight=False)
