"""`ttt-lab reproduce`: `ttt_lab.api.reproduce` re-runs and compares; this shows the differences."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ttt_lab import api


def run_reproduce(run_id: str, steps: int | None, console: Console, overrides: list[str] | None = None,
                  trust_code: bool = False) -> int:
    result = api.reproduce(run_id, steps=steps, overrides=overrides, trust_code=trust_code)
    what = f"train/ metrics up to step {steps}" if steps is not None else "final metrics"
    bad = result.mismatches
    if not bad:
        how = "identical" if not result.tolerance else f"within a relative {result.tolerance:g}"
        console.print(f"[green]reproduced:[/] {len(result.rows)} {what} of run {run_id} are {how}.",
                      highlight=False)
        return 0
    table = Table(title=f"{len(bad)} of {len(result.rows)} {what} differ", title_justify="left")
    for col in ("metric", "step", "logged", "reproduced", "difference"):
        table.add_column(col)
    for key, step, old, new in bad:
        diff = "-" if old is None or new is None else f"{new - old:+.6g}"
        table.add_row(key, "final" if step < 0 else str(step), str(old), str(new), diff)
    console.print(table)
    return 1
