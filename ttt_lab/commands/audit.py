"""`ttt-lab audit opponent|dataset|policy`: run the checks, show them, write them, track them."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ttt_lab.audit import output
from ttt_lab.audit.checks import FAIL
from ttt_lab.audit.run import KINDS, run_kind, tracking_job
from ttt_lab.config.load import config_hash, load
from ttt_lab.errors import TttLabError


def run_audit(kind: str, overrides: list[str], console: Console, file: Path | None = None,
              warn_only: bool = False) -> int:
    """The exit code: 1 when a check FAILs (0 with `warn_only`)."""
    if kind not in KINDS:
        raise TttLabError(f"Unknown audit '{kind}'. Choose one of: {', '.join(KINDS)} "
                          "(e.g. `ttt-lab audit opponent tie_break=first`).")
    if file is not None and kind != "dataset":
        raise TttLabError("--file only applies to `ttt-lab audit dataset` (a saved dataset.jsonl).")
    loaded = load(overrides)
    logger = None
    if loaded.cfg.tracking.enabled:
        from ttt_lab.tracking.background import BackgroundLogger

        logger = BackgroundLogger(loaded.cfg.tracking.uri, loaded.cfg.tracking.artifacts)
    try:
        audit = run_kind(kind, loaded, console, file)
    except BaseException:
        if logger is not None:
            logger.cancel()
        raise
    console.print(output.rich_table(audit))
    folder = Path(loaded.cfg.audit.out) / f"{kind}-{config_hash({'all': loaded.tree})}"
    paths = output.write(audit, folder)
    console.print(f"{audit.kind} audit {audit.status} in {audit.seconds:.2f} s; wrote {paths[0]} "
                  f"(+ audit.md, audit.html)", highlight=False)
    if logger is not None:
        run_id = logger.log(tracking_job(loaded, audit, paths))
        console.print(f"MLflow run {run_id} in experiment '{loaded.cfg.tracking.experiment}'", highlight=False)
    if audit.status == FAIL:
        failed = ", ".join(c.name for c in audit.checks if c.status == FAIL)
        console.print(f"[bold red]FAIL:[/] {failed}" + (" (--warn-only: exit 0)" if warn_only else ""))
        return 0 if warn_only else 1
    return 0
