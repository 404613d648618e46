"""`ttt-lab train`."""

from __future__ import annotations

from rich.console import Console

from ttt_lab.config.load import load
from ttt_lab.evaluation.tables import cell, pct
from ttt_lab.train.pipeline import train


def run_train(overrides: list[str], fresh: bool, console: Console) -> None:
    from rich.table import Table

    loaded = load(overrides)
    out = train(loaded, console, fresh=fresh)
    table = Table(title=f"greedy policy, {loaded.cfg.eval.games} games per opponent (same games for every row)")
    for col in ("checkpoint", "opponent", "win", "draw", "loss", "invalid", "format"):
        table.add_column(col)
    rows = [("SFT", s) for s in out.sft or []] + [("final", s) for s in out.final]
    for name, s in rows:
        table.add_row(name, s.opponent, cell(s.rate(s.wins), *s.interval(s.wins)),
                      cell(s.rate(s.draws), *s.interval(s.draws)), cell(s.rate(s.losses), *s.interval(s.losses)),
                      pct(s.invalid_rate), pct(s.format_rate))
    console.print(table)
    console.print(f"checkpoint: {out.checkpoint}  ({out.seconds / 60:.1f} min; config hash {loaded.config_hash})",
                  highlight=False)
    if out.run_id:
        console.print(f"MLflow run {out.run_id}; browse with `ttt-lab ui`", highlight=False)
