"""`ttt-lab train`."""

from __future__ import annotations

from rich.console import Console

from ttt_lab.api import train
from ttt_lab.config.load import load
from ttt_lab.evaluation.tables import caption, rate_cell
from ttt_lab.formats import pct, points


def run_train(overrides: list[str], fresh: bool, console: Console) -> int:
    """Train and print the results; with train.processes > 1 (and not already one of several
    processes) start that many processes, each running this, and wait for them."""
    from ttt_lab.train import distributed

    loaded = load(overrides)
    n, given = loaded.cfg.train.processes, distributed.world_size()
    if given > 1:  # started by torchrun / accelerate launch / srun: these are the ranks (`train` checks n)
        return rank_main(overrides, fresh)
    if n > 1:
        console.print(f"training in {n} processes (train.processes={n}); rank 0 reports", highlight=False)
        return distributed.launch(rank_main, (overrides, fresh), n, loaded.cfg.model.device)
    _train_and_report(loaded, fresh, console)
    return 0


def rank_main(overrides: list[str], fresh: bool) -> int:
    """One of train.processes processes: rank 0 prints (and its errors, as one paragraph);
    the others are silent."""
    import io
    import sys

    from ttt_lab.errors import TttLabError
    from ttt_lab.redact import RedactedStream
    from ttt_lab.train import distributed

    main = distributed.is_main()
    console = Console(file=RedactedStream(sys.stdout), width=160) if main else Console(file=io.StringIO())
    try:
        _train_and_report(load(overrides), fresh, console)
    except TttLabError as e:
        if main:
            from ttt_lab.error_output import print_error

            print_error(e)
        return 2
    return 0


def _train_and_report(loaded, fresh: bool, console: Console) -> None:
    from rich.table import Table

    from ttt_lab import log

    log.install(console)
    out = train(loaded, fresh=fresh)
    if not out.final:
        return  # not rank 0 of several processes
    exact = out.final[0].mode == "exact"
    how = ("exact (the game tree walked)" if exact
           else f"{loaded.cfg.eval.games} games per opponent (same games for every row)")
    table = Table(title=f"greedy policy, {how}", caption=caption(exact))
    for col in ("checkpoint", "opponent", "win", "draw", "loss", "invalid", "format"):
        table.add_column(col)
    rows = [("SFT", s) for s in out.sft or []] + [("final", s) for s in out.final]
    for name, s in rows:
        rates = s.outcome_rates()
        table.add_row(name, s.opponent, *(rate_cell(*rates[k], exact) for k in ("win", "draw", "loss")),
                      pct(s.invalid_rate), pct(s.format_rate))
    console.print(table)
    if out.gains and exact:
        console.print("final against SFT, exact: " + "; ".join(
            f"{g.opponent} {points(g.points_delta)} points per 100 games" for g in out.gains), highlight=False)
    elif out.gains:
        console.print("final against SFT, game by game: " + "; ".join(
            f"{g.opponent} {g.better} better, {g.worse} worse (sign test p = {g.p_value:.3g})" for g in out.gains),
            highlight=False)
    console.print(f"checkpoint: {out.checkpoint}  ({out.seconds / 60:.1f} min; config hash {loaded.config_hash})",
                  highlight=False)
    if out.run_id:
        console.print(f"MLflow run {out.run_id}; browse with `ttt-lab ui`", highlight=False)
