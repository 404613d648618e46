"""`ttt-lab audit opponent|dataset|policy`: `ttt_lab.api.audit` runs, writes and tracks the checks;
this shows them."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ttt_lab import api
from ttt_lab.cli_kit.tables import audit_table


def run_audit(kind: str, overrides: list[str], console: Console, file: Path | None = None,
              warn_only: bool = False) -> int:
    """The exit code: 1 when a check FAILs (0 with `warn_only`)."""
    result = api.audit(kind, overrides, file=file)  # type: ignore[arg-type]  # checked there
    found = result.audit
    console.print(audit_table(result))
    console.print(f"{found.kind} audit {found.status} in {found.seconds:.2f} s; wrote {result.paths[0]} "
                  f"(+ audit.md, audit.html)", highlight=False)
    if result.run_id is not None:
        console.print(f"MLflow run {result.run_id} in experiment '{result.experiment}'", highlight=False)
    if result.status == "FAIL":
        note = " (--warn-only: exit 0)" if warn_only else ""
        console.print(f"[bold red]FAIL:[/] {', '.join(result.failed)}{note}")
        return 0 if warn_only else 1
    return 0
