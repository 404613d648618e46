"""A section of the report: a title and its blocks (`ttt_lab.pages`), rendered as HTML or
Markdown. Shared by `render` and `audit_sections`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.pages import render_blocks


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)

    @property
    def html(self) -> str:
        return render_blocks(self.blocks)

    @property
    def markdown(self) -> str:
        return render_blocks(self.blocks, markdown=True)
