"""Writes the generated reference pages: docs/reference/cli.md from the typer app's commands and
docs/reference/config.md from the schema dataclasses (every key, its default, its docstring).

Run by MkDocs as a hook before it reads the docs (mkdocs.yml: hooks), so `mkdocs build` always
documents the code it is built from; also runnable alone: `python docs/gen_reference.py`. A page
is rewritten only when its text changes (so `mkdocs serve` does not rebuild in a loop)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from pathlib import Path
from typing import Any

REFERENCE = Path(__file__).resolve().parent / "reference"


def _write(name: str, text: str) -> None:
    path = REFERENCE / name
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


# --- the CLI -----------------------------------------------------------------------------------

def _param_row(p: Any) -> str:
    """A row for a (typer-vendored) click parameter."""
    if p.param_type_name == "argument":
        name = f"`{p.name.upper()}`"
        help_ = getattr(p, "help", "") or ""
    else:
        name = ", ".join(f"`{o}`" for o in p.opts)
        help_ = getattr(p, "help", "") or ""
    default = "" if p.default in (None, False, ()) or p.required else f"`{p.default}`"
    return f"| {name} | {_cell(help_)} | {default} |"


def _command_md(cmd: Any, path: str, level: int) -> list[str]:
    out = [f"{'#' * level} `{path}`", ""]
    if cmd.help:
        out += [inspect.cleandoc(cmd.help), ""]
    params = [p for p in cmd.params if p.name not in ("help",) and not getattr(p, "hidden", False)]
    if params:
        out += ["| argument / option | meaning | default |", "|---|---|---|", *map(_param_row, params), ""]
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            out += _command_md(sub, f"{path} {name}", level + 1)
    return out


def cli_page() -> str:
    import typer.main

    from ttt_lab.cli import app

    root = typer.main.get_command(app)
    lines = ["# Command line", "",
             "Generated from the `ttt-lab` app (`docs/gen_reference.py`): the same text as `ttt-lab COMMAND "
             "--help`. Every command that takes overrides takes Hydra's grammar: `key=value`, `group=option`, "
             "`+key=value`, `~key`, and the short names of [the configuration reference](config.md).", ""]
    lines += ["## Global options", "", "| option | meaning | default |", "|---|---|---|"]
    lines += [_param_row(p) for p in root.params if p.name != "help"]
    lines.append("")
    for name, cmd in root.commands.items():
        lines += _command_md(cmd, f"ttt-lab {name}", 2)
    return "\n".join(lines).rstrip() + "\n"


# --- the configuration -------------------------------------------------------------------------

def _field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass (a string literal after it)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in zip(body, [*body[1:], None], strict=True):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _show(value: Any) -> str:
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict) and len(str(value)) > 60:
        return "(see below)" if value else "`[]`"
    return f"`{value}`"


Nested = tuple[type, str, str]
"""A nested section to document: its dataclass, its key prefix and the text above its table."""


def _section(cls: type, prefix: str, hints_of: dict[type, dict[str, Any]]) -> tuple[list[str], list[Nested]]:
    """The table of `cls`'s leaves under `prefix`, and the nested dataclasses to document next
    (the field's own docstring above each: a nested section is documented where it is declared)."""
    docs = _field_docs(cls)
    hints = hints_of.setdefault(cls, typing.get_type_hints(cls))
    rows, nested = [], []
    for f in dataclasses.fields(cls):
        key, value, doc = f"{prefix}{f.name}", _default(f), docs.get(f.name, "")
        if dataclasses.is_dataclass(value):
            nested.append((type(value), f"{key}.", doc))
            continue
        hint = hints[f.name]
        item = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
        if typing.get_origin(hint) is list and item:
            nested.append((item[0], f"{key}.N.", doc))
        entry = _dict_of_lists(hint)
        if entry is not None:
            nested.append((entry, f"{key}.NAME.N.", _named_lists(doc, value)))
        rows.append(f"| `{key}` | {_show(value)} | {_cell(doc)} |")
    return rows, nested


def _dict_of_lists(hint: Any) -> type | None:
    """The dataclass of a `dict[str, list[dataclass]]` field (named lists, as eval's suites)."""
    if typing.get_origin(hint) is not dict:
        return None
    inner = typing.get_args(hint)[1]
    item = [a for a in typing.get_args(inner) if dataclasses.is_dataclass(a)]
    return item[0] if typing.get_origin(inner) is list and item else None


def _named_lists(doc: str, value: dict[str, list[Any]]) -> str:
    """The field's docstring, then each shipped list by name: its entries' fields that differ from
    the dataclass's defaults."""
    def entry(e: Any) -> str:
        first, *rest = dataclasses.fields(e)
        changed = [f"{f.name}={getattr(e, f.name)}" for f in rest if getattr(e, f.name) != _default(f)]
        return f"`{getattr(e, first.name)}`" + (f" ({', '.join(changed)})" if changed else "")
    shipped = [f"- `{name}`: " + ", ".join(entry(e) for e in items) for name, items in value.items()]
    return "\n".join([doc, "", "Shipped, each entry by its first field and the settings in which it differs from the "
                       "defaults below:", "", *shipped]).strip()


def config_page() -> str:
    from ttt_lab.config.schema import Config

    lines = ["# Configuration", "",
             "Every key of the configuration with its default and meaning, generated from the schema dataclasses "
             "(`ttt_lab/config/schema.py` and the section modules it imports) by `docs/gen_reference.py`. The "
             "schema is the one source of defaults; files under `conf/` select groups and override values (the "
             "root selects `experiment=tiny_cpu_quick`, the embedded default; `~experiment` sets it aside), so a "
             "preset's values (e.g. `experiment=tiny_cpu`) differ from these: `ttt-lab config show "
             "experiment=tiny_cpu --diff` prints what a preset changes.", ""]
    hints_of: dict[type, dict[str, Any]] = {}
    queue: list[Nested] = [(Config, "", "")]
    while queue:
        cls, prefix, doc = queue.pop(0)
        rows, nested = _section(cls, prefix, hints_of)
        title = prefix.rstrip(".") or "top level"
        lines += [f"## `{title}`", ""]
        if doc:
            lines += [doc, ""]
        if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
            lines += [inspect.cleandoc(cls.__doc__), ""]
        if rows:
            lines += ["| key | default | meaning |", "|---|---|---|", *rows, ""]
        queue = nested + queue
    return "\n".join(lines).rstrip() + "\n"


def generate() -> None:
    REFERENCE.mkdir(exist_ok=True)
    _write("cli.md", cli_page())
    _write("config.md", config_page())


def on_pre_build(config: Any, **kwargs: Any) -> None:
    """MkDocs hook: the generated pages are written before MkDocs collects the docs."""
    generate()


if __name__ == "__main__":
    generate()
