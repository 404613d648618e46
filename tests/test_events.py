"""The domain reports progress as `ttt_lab.events`: the CLI's front end draws them with rich, an
API user gets plain lines (or nothing), and rich stays in the CLI layer."""

from __future__ import annotations

import ast
import io
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from ttt_lab import events
from ttt_lab.cli_kit import front
from ttt_lab.progress import games_progress

PACKAGE = Path(__file__).resolve().parents[1] / "ttt_lab"
CLI_LAYER = ("commands", "cli_kit", "cli", "completion")
"""The packages and modules that present: the only importers of rich."""


def _imports_rich(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n == "rich" or n.startswith("rich.") for n in names):
            return True
    return False


def test_no_module_outside_the_cli_layer_imports_rich() -> None:
    outside = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0].removesuffix(".py")
               not in CLI_LAYER]
    assert outside and not [str(p.relative_to(PACKAGE)) for p in outside if _imports_rich(p)]
    assert _imports_rich(PACKAGE / "cli_kit" / "front.py")  # the check sees an import when there is one


def test_a_table_prints_as_aligned_plain_text() -> None:
    t = events.Table("study 'x'", ("trial", "state"), (("0", "COMPLETE"), ("10", "FAIL")), "one caption")
    assert str(t).splitlines() == ["study 'x'", "trial  state", "0      COMPLETE", "10     FAIL", "one caption"]


@pytest.fixture
def no_front():
    yield
    events.install(None)


def test_the_cli_front_draws_tables_trials_and_bars(no_front) -> None:
    out = io.StringIO()
    front.install(Console(file=out, width=120, force_terminal=True))
    events.emit(events.Table("study 'x'", ("trial", "overrides"), (("0", "[red]seed=0"),)))
    events.emit(events.TrialEnded(0, "FAIL", "boom"))
    with games_progress(unit="trials") as bars:
        task = bars.add_task("study x", total=2)
        bars.advance(task, 2)
    raw = out.getvalue()
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", raw)
    assert "┃ trial" in text and "[red]seed=0" in text  # a rich table; its cells are not markup
    assert "\x1b[31mFAIL" in raw and "2/2" in text  # the state in red; a bar that reached its total


def test_an_api_sweep_with_basic_config_prints_lines_not_reprs(tmp_path: Path) -> None:
    code = ("import logging; logging.basicConfig(level=logging.INFO, format='%(message)s'); "
            "from ttt_lab import api; "
            "api.sweep(None, ['seed=0,1', 'experiment=smoke', 'train.phases.0.batch_size=8'], dry_run=True)")
    env = {"TTT_LAB_HOME": str(tmp_path / "runs"), "TTT_LAB_TORCH_THREADS": "1", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    said = out.stdout + out.stderr
    assert "trial  overrides" in said and "seed=1" in said  # the plan, as a plain table
    assert " object at 0x" not in said and "<rich" not in said and "Table(" not in said


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_plain_lines_without_a_front_and_progress_dropped(no_front) -> None:
    events.install(None)
    logger, kept = logging.getLogger("ttt_lab.events"), _Kept()
    logger.addHandler(kept)
    level, logger.level = logger.level, logging.INFO
    try:
        events.emit(events.TrialEnded(1, "COMPLETE", "0.250", 2.0))
        with games_progress() as bars:
            bars.advance(bars.add_task("eval", total=3), 3)
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
    assert kept.lines == ["trial 1 COMPLETE in 2.0 s  0.250"]
