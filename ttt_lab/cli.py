"""The `ttt-lab` command line. Thin: every heavy import happens inside the command that needs it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ttt_lab import api, timing
from ttt_lab.cli_kit.run import STATE as _state
from ttt_lab.cli_kit.run import Overrides, with_options
from ttt_lab.cli_kit.run import console as _console
from ttt_lab.cli_kit.run import run as _run
from ttt_lab.completion import complete_sweep_args  # imports nothing heavy

app = typer.Typer(
    name="ttt-lab",
    help="Experiments, sweeps and audits for RL on tic-tac-toe. Config is Hydra: pass key=value overrides.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the composed configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")
runs_app = typer.Typer(help="Runs in the tracking store.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"ttt-lab {version('ttt-lab')}")
        raise typer.Exit()


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks for errors.")] = False,
    config_dir: Annotated[list[Path] | None, typer.Option("--config-dir", help="A folder of your own config groups "
        "(experiment/NAME.yaml, …) and studies (sweeps/NAME.yaml) beside the shipped ones; repeatable; also "
        "$TTT_LAB_CONFIG_DIR.", show_default=False)] = None,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    _state["debug"] = debug
    timing.own_process()
    if config_dir:
        api.add_config_dirs(config_dir)


@config_app.command("show")
def config_show(
    overrides: Overrides = None,
    diff: Annotated[bool, typer.Option("--diff", help="Only the keys that differ from the defaults.")] = False,
) -> None:
    """Print the resolved configuration.

    Example: `ttt-lab config show experiment=published batch_size=512 --diff`
    """

    def body() -> None:
        from ttt_lab.commands.config_show import show, show_diff

        (show_diff if diff else show)(overrides or [], _console())

    _run(body)


@app.command("eval")
def eval_(overrides: Overrides = None) -> None:
    """Evaluate a player against an opponent suite (win/draw/loss with 95 % intervals).

    Example: `ttt-lab eval player=random eval.suite=quick games=500`
    """

    def body() -> None:
        from ttt_lab.commands.evaluate import evaluate

        evaluate(overrides or [], _console())

    _run(body)


@app.command("audit")
def audit_(
    kind: Annotated[str, typer.Argument(help="What to audit: opponent | dataset | policy.", show_default=False)],
    overrides: Overrides = None,
    warn_only: Annotated[bool, typer.Option("--warn-only", help="Exit 0 even when a check FAILs.")] = False,
    file: Annotated[str | None, typer.Option("--file", help="dataset: audit a saved dataset.jsonl (from a "
                                             "training phase folder) instead of the configured one.")] = None,
) -> None:
    """Bias audits: tie-breaking, noise, seeding and symmetry of an opponent; balance and order of a
    dataset; memorisation of one opponent by a policy. Exits 1 when a check FAILs.

    Example: `ttt-lab audit opponent tie_break=first`
    """

    def body() -> int:
        from pathlib import Path

        from ttt_lab.commands.audit import run_audit

        return run_audit(kind, overrides or [], _console(), Path(file) if file else None, warn_only)

    code = _run(body)
    if code:
        raise typer.Exit(code)


@app.command("sweep")
@with_options(api.SweepOptions)
def sweep_(
    args: Annotated[list[str] | None, typer.Argument(help="A study file (sweeps/NAME.yaml) and/or overrides; "
                                                     "sweep values in Hydra syntax: a,b,c  range(0,3)  choice(a,b)  "
                                                     "interval(1e-5,1e-3)  tag(log, interval(…)).",
                                                     show_default=False, autocompletion=complete_sweep_args)] = None,
    status: Annotated[bool, typer.Option("--status", help="Show the study's trials and its launcher jobs; run "
                                         "nothing.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the named studies (./sweeps, --config-dir folders, "
                                        "the package) and where each comes from; run nothing.")] = False,
    *,
    options: api.SweepOptions,
) -> None:
    """Run a study: a grid over override values, or an Optuna search, one MLflow child run per trial.
    Re-running the same command skips finished trials and re-runs failed or interrupted ones.

    Example: `ttt-lab sweep batch_size=64,128,256,512 experiment=smoke --dry-run`
    """

    def body() -> int:
        from ttt_lab.commands import sweep as command

        console = _console()
        if list_:
            return command.list_studies(console)
        if status:
            return command.status(args or [], console, options)
        return command.sweep(args or [], options)

    code = _run(body)
    if code:
        raise typer.Exit(code)


@app.command("report")
def report_(
    study: Annotated[str, typer.Argument(help="A study name (its MLflow experiment) or its parent run id.",
                                         show_default=False)],
    out: Annotated[str | None, typer.Option("--out", help="Folder (default runs/reports/STUDY).")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", help="Config overrides for where the store "
                                                        "is, e.g. --set tracking=server.")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="A second study: both side by side, with "
                                                "their config differences.")] = None,
    trust_code: Annotated[bool, typer.Option("--trust-code", help="Build a user's opponent class named by the "
                                             "stored study (runs its code here) for the audits.")] = False,
) -> None:
    """Write a study's report: index.html (self-contained) and report.md with results per condition,
    learning curves, stability flags, audits and how to reproduce every number.

    Example: `ttt-lab report quickstart`
    """

    def body() -> None:
        from ttt_lab.commands.report import report

        report(study, out, _console(), overrides, compare, trust_code)

    _run(body)


@app.command("reproduce")
def reproduce_(
    run_id: Annotated[str, typer.Argument(help="The MLflow run id of a `ttt-lab train` or sweep trial run.",
                                          show_default=False)],
    steps: Annotated[int | None, typer.Option("--steps", min=1, help="Only the first N training steps; compares "
                                              "the train/ metrics logged up to there.")] = None,
    overrides: Annotated[list[str] | None, typer.Option("--set", help="Config overrides for where the store "
                                                        "is, e.g. --set tracking=server.")] = None,
    trust_code: Annotated[bool, typer.Option("--trust-code", help="Build a user's opponent class named by the "
                                             "logged config (runs its code here).")] = False,
) -> None:
    """Re-run a logged run from its own resolved config in runs/reproduce/RUN_ID and compare its numbers
    with the logged ones; exits 1 and prints the differences when they are not identical.

    Example: `ttt-lab reproduce 3f2a… --steps 5`
    """

    def body() -> int:
        from ttt_lab.commands.reproduce import run_reproduce

        return run_reproduce(run_id, steps, _console(), overrides, trust_code)

    code = _run(body)
    if code:
        raise typer.Exit(code)


@app.command("train")
def train_(
    overrides: Overrides = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Discard this config's earlier phases and start over.")]
    = False,
) -> None:
    """Train: SFT warm-up, then GRPO/CISPO phases; the same config resumes where it stopped.

    Example: `ttt-lab train experiment=tiny_cpu`
    """

    def body() -> int:
        from ttt_lab.commands.train import run_train

        return run_train(overrides or [], fresh, _console())

    code = _run(body)
    if code:
        raise typer.Exit(code)


@app.command("play")
def play(
    overrides: Overrides = None,
    watch: Annotated[bool, typer.Option("--watch", help="Watch the configured player play the opponent.")] = False,
    first: Annotated[str, typer.Option(help="Who moves first: human (or the player with --watch) | opponent.")]
    = "human",
    against: Annotated[str, typer.Option(help="The other side: opponent (the config's) | player.")] = "opponent",
    delay: Annotated[float, typer.Option(help="Seconds between moves with --watch.", min=0.0, max=60.0)] = 0.0,
) -> None:
    """Play a game in the terminal, or watch one.

    Example: `ttt-lab play opponent=minimax_first --first opponent`
    """

    def body() -> None:
        from ttt_lab.commands.play import play_game

        play_game(overrides or [], watch=watch, first=first, against=against, delay=delay, console=_console())

    _run(body)


@app.command("ui")
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
    fmt: Annotated[str | None, typer.Option("--format", help="csv | parquet | json (default: --out's suffix, "
                                            "else csv).", show_default=False)] = None,
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
    limit: Annotated[int, typer.Option(help="How many runs to show (MLflow returns at most 50,000).", min=1,
                                       max=50000)] = 20,
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


if __name__ == "__main__":
    app()
