"""The generated configuration reference documents every key of the schema: nested sections, lists
of sections (`train.phases.N`) and named lists of sections (`eval.suites.NAME.N`), each nested
section under its field's own docstring."""

from __future__ import annotations

import dataclasses
import importlib.util
import typing
from pathlib import Path

import pytest

from ttt_lab.config.schema import Config

GENERATOR = Path(__file__).resolve().parents[2] / "docs" / "gen_reference.py"


@pytest.fixture(scope="module")
def page() -> str:
    spec = importlib.util.spec_from_file_location("gen_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.config_page()


def _item(hint: object) -> type | None:
    """The dataclass a list, or a dict of lists, holds."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is dict:
        return _item(args[1])
    found = [a for a in args if dataclasses.is_dataclass(a)]
    return found[0] if typing.get_origin(hint) is list and found else None


def _keys(cls: type, prefix: str = "") -> list[str]:
    """Every leaf key under `cls`, as the reference names it."""
    hints = typing.get_type_hints(cls)
    out: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        key, hint = f"{prefix}{f.name}", hints[f.name]
        if dataclasses.is_dataclass(hint):
            out += _keys(hint, f"{key}.")  # type: ignore[arg-type]
            continue
        out.append(key)
        item = _item(hint)
        if item is not None:
            sub = ".NAME.N." if typing.get_origin(hint) is dict else ".N."
            out += _keys(item, f"{key}{sub}")
    return out


def test_every_schema_key_has_a_row(page: str) -> None:
    keys = _keys(Config)
    assert "eval.suites.NAME.N.p_random" in keys and "train.sft.dagger_until.max_invalid" in keys
    missing = [k for k in keys if f"| `{k}` |" not in page]
    assert not missing


def test_a_nested_section_carries_its_fields_docstring(page: str) -> None:
    section = page.split("## `train.sft.dagger_until`", 1)[1].split("\n## ", 1)[0]
    assert "dagger_tree" in section.split("|", 1)[0]  # the field's docstring names what it needs


def test_the_shipped_suites_are_listed_with_what_sets_them_apart(page: str) -> None:
    from ttt_lab.config.eval_schema import EvalConfig

    section = page.split("## `eval.suites.NAME.N`", 1)[1].split("\n## ", 1)[0]
    for name, entries in EvalConfig().suites.items():
        line = next(x for x in section.splitlines() if x.startswith(f"- `{name}`:"))
        assert all(f"`{e.name}`" in line for e in entries)
        assert all(f"p_random={e.p_random}" in line for e in entries if e.p_random)
