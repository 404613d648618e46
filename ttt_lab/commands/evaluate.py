"""`ttt-lab eval`: `ttt_lab.api.evaluate` plays and tracks the games; this shows them."""

from __future__ import annotations

from rich.console import Console

from ttt_lab import api
from ttt_lab.cli_kit.tables import eval_table


def evaluate(overrides: list[str], console: Console) -> None:
    out = api.evaluate(overrides)
    console.print(eval_table(out))
    if out.failures:
        console.print(f"[yellow]endpoint failures counted as invalid moves:[/] {out.failures}")
    console.print(f"{out.games} games in {out.seconds:.2f} s ({out.games / out.seconds:,.0f} games/s); "
                  f"config hash {out.config_hash}", highlight=False)
    if out.transcript:
        console.print(f"transcript: {out.transcript}", highlight=False)
    if out.run_id:
        console.print(f"MLflow run {out.run_id} in experiment '{out.experiment}' ({out.tracking_uri}); browse with "
                      "`ttt-lab ui`", highlight=False)
