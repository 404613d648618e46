"""`ttt-lab config show`: the config `ttt_lab.api.load_config` composes, or its differences from
the defaults (`ttt_lab.api.config_diff`)."""

from __future__ import annotations

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from ttt_lab import api
from ttt_lab.redact import redact


def show(overrides: list[str], console: Console) -> None:
    from omegaconf import OmegaConf

    loaded = api.load_config(overrides)
    text = redact(OmegaConf.to_yaml(OmegaConf.create(loaded.logged_tree)))
    console.print(Syntax(text, "yaml", theme="ansi_dark", background_color="default"))
    console.print(f"# config hash: {loaded.config_hash}", style="dim", highlight=False)


def show_diff(overrides: list[str], console: Console) -> None:
    found = api.config_diff(overrides)
    table = Table(title=f"differences from the defaults (config hash {found.config_hash})")
    for col in ("key", "default", "value"):
        table.add_column(col)
    for key, (default, value) in found.changes.items():
        table.add_row(key, redact(repr(default)), redact(repr(value)))
    console.print(table if table.row_count else "no differences from the defaults")
