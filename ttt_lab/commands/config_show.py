"""`ttt-lab config show`."""

from __future__ import annotations

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from ttt_lab.config.flatten import flat_items
from ttt_lab.config.load import defaults_tree, load
from ttt_lab.redact import redact


def show(overrides: list[str], diff: bool, console: Console) -> None:
    from omegaconf import OmegaConf

    loaded = load(overrides)
    if not diff:
        text = redact(OmegaConf.to_yaml(OmegaConf.create(loaded.logged_tree)))
        console.print(Syntax(text, "yaml", theme="ansi_dark", background_color="default"))
        console.print(f"# config hash: {loaded.config_hash}", style="dim", highlight=False)
        return
    base, now = flat_items(defaults_tree()), flat_items(loaded.logged_tree)
    table = Table(title=f"differences from the defaults (config hash {loaded.config_hash})")
    for col in ("key", "default", "value"):
        table.add_column(col)
    for key in sorted(set(base) | set(now)):
        if base.get(key, "<absent>") != now.get(key, "<absent>"):
            table.add_row(key, redact(repr(base.get(key, "<absent>"))), redact(repr(now.get(key, "<absent>"))))
    console.print(table if table.row_count else "no differences from the defaults")
