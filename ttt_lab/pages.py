"""Pages from templates (`ttt_lab/templates/`): reports and audits share one base page and
one stylesheet. HTML templates (`*.html.j2`) escape every value unless marked safe (only
SVG that ttt-lab drew itself is); Markdown templates escape table cells.

A page is a list of blocks: a paragraph, a heading, a table, figures, an audit."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any


@dataclass
class Para:
    text: str
    style: str = ""
    """"" | "note" (italic) | "warn" (bold, coloured)"""
    kind: str = "para"


@dataclass
class Heading:
    text: str
    kind: str = "heading"


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    kind: str = "table"


@dataclass
class Figures:
    items: list[tuple[str, str, str]] = field(default_factory=list)
    """(caption, inline SVG drawn by ttt-lab, file name under figures/ or "")"""
    kind: str = "figures"


@dataclass
class AuditBlock:
    audit: Any
    """An `audit.checks.Audit`."""
    figures: list[tuple[str, str]] = field(default_factory=list)
    """(caption, inline SVG) of the audit's figures."""
    kind: str = "audit"


@cache
def _env():
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("ttt_lab", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["md_cell"] = lambda v: str(v).replace("|", "\\|").replace("\n", " ")
    env.filters["num"] = fmt
    return env


def render(template: str, **context: Any) -> str:
    return _env().get_template(template).render(**context)


def render_blocks(blocks: list, markdown: bool = False) -> str:
    """One run of blocks, as an HTML fragment or as Markdown."""
    module = _env().get_template("blocks.md.j2" if markdown else "blocks.html.j2").module
    return str(module.blocks(blocks))


def fmt(value: float | None) -> str:
    """A check's value: integers plainly, small or large numbers in 3 significant digits."""
    if value is None:
        return "-"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3g}"
    return f"{value:.4f}".rstrip("0").rstrip(".") if value != int(value) else f"{int(value)}"
