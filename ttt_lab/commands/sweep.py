"""`ttt-lab sweep`: `ttt_lab.api.sweep` runs the study (its tables and trials arrive as events the
console draws); `--status` and `--list` show what `ttt_lab.api` returns."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ttt_lab import api
from ttt_lab.cli_kit.tables import rich_table


def sweep(args: list[str], options: api.SweepOptions) -> int:
    """The exit code: 1 when a trial failed or is left unfinished."""
    return 0 if api.sweep(None, args, options).ok else 1


def status(args: list[str], console: Console, options: api.SweepOptions) -> int:
    """`ttt-lab sweep --status`: the study's trials and its launcher jobs."""
    found = api.sweep_status(None, args, options)
    console.print(rich_table(found.trials))
    console.print(", ".join(f"{n} {s.lower()}" for s, n in found.counts.items()) or "no trials yet",
                  highlight=False)
    if found.jobs is not None:
        console.print(rich_table(found.jobs))
    return 0


def list_studies(console: Console) -> int:
    """`ttt-lab sweep --list`: every named study, where it comes from, and its question."""
    table = Table(title="named studies (`ttt-lab sweep NAME`; the first place listed wins)")
    for col in ("name", "from", "file", "question"):
        table.add_column(col, overflow="fold")
    places = api.named_studies()
    for p in places:
        shown = "[bold red]CLASH[/] " + escape(p.origin) if p.clash else escape(p.origin)
        if not p.clash and not p.first:
            shown = f"[dim]{escape(p.origin)} (same file content)[/]"
        table.add_row(escape(p.name), shown, escape(str(p.path)), escape(p.question))
    console.print(table if places else "no named studies found (./sweeps, --config-dir folders, the package)")
    if any(p.clash for p in places):
        console.print("a CLASH name is defined differently in several places: give the study's path, or rename one",
                      highlight=False)
    return 0
