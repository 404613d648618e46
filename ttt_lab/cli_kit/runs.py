"""The `ttt-lab runs` sub-app (export, list, sync) and `ttt-lab ui`: the commands that read the
tracking store rather than run experiments."""

from __future__ import annotations

from typing import Annotated

import typer

from ttt_lab.cli_kit.run import Overrides
from ttt_lab.cli_kit.run import console as _console
from ttt_lab.cli_kit.run import run as _run

runs_app = typer.Typer(help="Runs in the tracking store.", no_args_is_help=True)


def ui(
    overrides: Overrides = None,
    port: Annotated[int, typer.Option(help="Port to serve on.", min=1, max=65535)] = 5000,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    optuna: Annotated[str | None, typer.Option("--optuna", help="Serve optuna-dashboard for this study instead "
                                               "(its trials, parameters, importances).", show_default=False)] = None,
    storage: Annotated[str | None, typer.Option(help="With --optuna: the Optuna storage URL (default: "
                                                "$TTT_LAB_OPTUNA_STORAGE or runs/optuna.db).",
                                                show_default=False)] = None,
) -> None:
    """Serve the MLflow UI on the project's tracking store (or, with --optuna, the Optuna dashboard
    of a study); Ctrl-C stops it.

    Example: `ttt-lab ui --port 5001`, `ttt-lab ui --optuna batch_size --port 8080`
    """

    def body() -> None:
        from ttt_lab.commands.ui import serve

        serve(overrides or [], host, port, _console(), optuna, storage)

    _run(body)


@runs_app.command("export")
def runs_export(
    study: Annotated[str, typer.Argument(help="A study name or its parent run id.", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | json.")] = "csv",
    out: Annotated[str | None, typer.Option("--out", help="File (default STUDY.FORMAT; - for stdout).")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", help="Store location: --set tracking=server.")] = None,
) -> None:
    """One row per trial of a study: overrides, seed, final metrics, config hash, run id, state.

    Example: `ttt-lab runs export quickstart --format parquet`
    """
    from ttt_lab.commands.runs import export_runs

    _run(lambda: export_runs(study, fmt, out, overrides or [], _console()))


@runs_app.command("list")
def runs_list(
    overrides: Overrides = None,
    limit: Annotated[int, typer.Option(help="How many runs to show.", min=1)] = 20,
) -> None:
    """The latest runs: id, experiment, key params and metrics, status.

    Example: `ttt-lab runs list --limit 5`
    """

    def body() -> None:
        from ttt_lab.commands.runs import list_runs

        list_runs(overrides or [], limit, _console())

    _run(body)


@runs_app.command("sync")
def runs_sync(overrides: Overrides = None) -> None:
    """Send what runs kept in `runs/tracking-fallback/` because their tracking server was gone when
    they ended.

    Example: `ttt-lab runs sync tracking=server tracking.uri=http://127.0.0.1:5000`
    """

    def body() -> None:
        from ttt_lab.commands.runs import sync_runs

        sync_runs(overrides or [], _console())

    _run(body)
