"""`ttt-lab eval`."""

from __future__ import annotations

from rich.console import Console

from ttt_lab.config.load import load
from ttt_lab.evaluation import tables
from ttt_lab.evaluation.run import run_eval
from ttt_lab.players.factory import build_player


def evaluate(overrides: list[str], console: Console) -> None:
    loaded = load(overrides)
    player = build_player(loaded.cfg)
    out = run_eval(loaded, player)
    console.print(tables.table(out.results, f"{player!r} vs suite '{loaded.cfg.eval.suite}'"))
    failures = getattr(player, "failures", None)
    if failures:
        console.print(f"[yellow]endpoint failures counted as invalid moves:[/] {dict(failures)}")
    games = sum(r.summary.games for r in out.results)
    console.print(f"{games} games in {out.play_seconds:.2f} s ({games / out.play_seconds:,.0f} games/s); "
                  f"config hash {loaded.config_hash}", highlight=False)
    if out.transcript:
        console.print(f"transcript: {out.transcript}", highlight=False)
    if out.run_id:
        console.print(f"MLflow run {out.run_id} in experiment '{loaded.cfg.tracking.experiment}' "
                      f"({loaded.cfg.tracking.uri}); browse with `ttt-lab ui`", highlight=False)
