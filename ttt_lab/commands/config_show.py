"""`ttt-lab config show`."""

from __future__ import annotations

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from ttt_lab.config.load import defaults_tree, load


def _flat(tree: object, prefix: str = "") -> dict[str, object]:
    if isinstance(tree, dict):
        out: dict[str, object] = {}
        for k, v in tree.items():
            out |= _flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(tree, list) and tree:
        out = {}
        for i, v in enumerate(tree):
            out |= _flat(v, f"{prefix}.{i}")
        return out
    return {prefix: tree}


def show(overrides: list[str], diff: bool, console: Console) -> None:
    from omegaconf import OmegaConf

    loaded = load(overrides)
    if not diff:
        text = OmegaConf.to_yaml(OmegaConf.create(loaded.tree))
        console.print(Syntax(text, "yaml", theme="ansi_dark", background_color="default"))
        console.print(f"# config hash: {loaded.config_hash}", style="dim", highlight=False)
        return
    base, now = _flat(defaults_tree()), _flat(loaded.tree)
    table = Table(title=f"differences from the defaults (config hash {loaded.config_hash})")
    for col in ("key", "default", "value"):
        table.add_column(col)
    for key in sorted(set(base) | set(now)):
        if base.get(key, "<absent>") != now.get(key, "<absent>"):
            table.add_row(key, repr(base.get(key, "<absent>")), repr(now.get(key, "<absent>")))
    console.print(table if table.row_count else "no differences from the defaults")
