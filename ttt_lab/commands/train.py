"""`ttt-lab train`: `ttt_lab.api.train` trains and evaluates (in the processes `train.processes`
asks for, through `ttt_lab.api.in_processes`); rank 0 shows the results."""

from __future__ import annotations

import io
import sys

from rich.console import Console

from ttt_lab import api, log
from ttt_lab.cli_kit import front
from ttt_lab.cli_kit.error_output import print_error
from ttt_lab.cli_kit.tables import gains_line, train_table
from ttt_lab.redact import redacted


def run_train(overrides: list[str], fresh: bool, console: Console) -> int:
    """Train and print the results; with train.processes > 1 (and not already one of several
    processes) start that many processes, each running `rank_main` (each composes its config
    in its own environment), and wait for them. Here, the config is composed once."""
    config = _compose(overrides)
    code = api.in_processes(config, rank_main, (overrides, fresh))
    if code is not None:
        return code
    _train_and_report(config, fresh, console)
    return 0


def _compose(overrides: list[str]) -> api.Loaded:
    return api.load_config(overrides)


def rank_main(overrides: list[str], fresh: bool) -> int:
    """One of train.processes processes: rank 0 prints (and its errors, as one paragraph);
    the others are silent."""
    main = log.is_rank_zero()
    console = Console(file=redacted(sys.stdout), width=160) if main else Console(file=io.StringIO())
    try:
        _train_and_report(overrides, fresh, console)
    except api.TttLabError as e:
        if main:
            print_error(e)
        return 2
    return 0


def _train_and_report(cfg: api.ConfigLike, fresh: bool, console: Console) -> None:
    front.install(console)
    out = api.train(cfg, fresh=fresh)
    if not out.final:
        return  # not rank 0 of several processes
    console.print(train_table(out))
    if out.gains:
        console.print(gains_line(out), highlight=False)
    console.print(f"checkpoint: {out.checkpoint}  ({out.seconds / 60:.1f} min; config hash {out.config_hash})",
                  highlight=False)
    if out.run_id:
        console.print(f"MLflow run {out.run_id}; browse with `ttt-lab ui`", highlight=False)
