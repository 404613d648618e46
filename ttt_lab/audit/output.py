"""Audits as `audit.json`, and pages from the shared templates: `audit.md` and a
self-contained `audit.html` (inline SVG figures: no script, no network), and a block that
reports include."""

from __future__ import annotations

import html
from pathlib import Path

from ttt_lab import atomic
from ttt_lab.audit.checks import Audit
from ttt_lab.pages import AuditBlock, render, render_blocks


def markdown(audit: Audit) -> str:
    return render("audit.md.j2", audit=audit)


def block(audit: Audit) -> AuditBlock:
    """The audit as a block of a page (a report includes it)."""
    return AuditBlock(audit, figures(audit))


def _heatmap(obs: list[float], exp: list[float]) -> str:
    size = 60
    cells = []
    for i in range(9):
        ratio = obs[i] / exp[i] if exp[i] else 1.0
        shade = max(0.0, min(1.0, (ratio - 0.5)))
        red, blue = int(255 * shade), int(255 * (1 - shade))
        x, y = (i % 3) * size, (i // 3) * size
        cells.append(f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="rgb({red},120,{blue})" '
                     f'stroke="#fff"/><text x="{x + size / 2}" y="{y + size / 2 + 5}" text-anchor="middle" '
                     f'font-size="13" fill="#fff">{ratio:.2f}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * size}" height="{3 * size}" role="img" '
            f'aria-label="chosen cells relative to uniform tie-breaking">{"".join(cells)}</svg>')


def _bars(labels: list[str], values: list[float], lows: list[float] | None = None,
          highs: list[float] | None = None, label: str = "") -> str:
    w, h, pad = max(240, 40 * len(values)), 160, 20
    bw = (w - 2 * pad) / max(1, len(values))
    top = max(values + (highs or []) + [1e-9])
    parts = []
    for i, v in enumerate(values):
        bh = (h - 2 * pad) * v / top
        x = pad + i * bw
        parts.append(f'<rect x="{x + 2:.1f}" y="{h - pad - bh:.1f}" width="{bw - 4:.1f}" height="{bh:.1f}" '
                     f'fill="#4a78c2"><title>{html.escape(labels[i])}: {v:.3g}</title></rect>')
        if lows is not None and highs is not None:
            y1 = h - pad - (h - 2 * pad) * lows[i] / top
            y2 = h - pad - (h - 2 * pad) * highs[i] / top
            cx = x + bw / 2
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="#222"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
            f'aria-label="{html.escape(label)}"><line x1="{pad}" x2="{w - pad}" y1="{h - pad}" y2="{h - pad}" '
            f'stroke="#888"/>{"".join(parts)}</svg>')


def figures(audit: Audit) -> list[tuple[str, str]]:
    """(caption, inline SVG) for each figure; audits merged from several sources (the phases
    of a dataset audit) get each source's figures, captioned with its name."""
    if "sources" in audit.data:
        return [(f"{name}: {cap}", svg) for name, data in audit.data["sources"].items()
                for cap, svg in _figures(data)]
    return _figures(audit.data)


def _figures(d: dict) -> list[tuple[str, str]]:
    out = []
    if "cells_observed" in d:
        out.append(("Chosen cells at tie positions relative to uniform tie-breaking (1.00 = fair)",
                    _heatmap(d["cells_observed"], d["cells_expected"])))
    if "histogram" in d:
        n = len(d["histogram"])
        labels = [f"bin {i}" for i in range(n)]
        out.append((f"p_random histogram over [{d['p_min']:g}, {d['p_max']:g}]",
                    _bars(labels, [float(x) for x in d["histogram"]], label="p_random histogram")))
        out.append(("Worst stratum deviation per batch (examples)",
                    _bars([f"batch {i}" for i in range(len(d["batch_deviation"]))], d["batch_deviation"],
                          label="stratum deviation per batch")))
    if "members" in d:
        ms = d["members"]
        how = "expected, exact" if d.get("mode") == "exact" else "with 95% intervals"
        out.append((f"Games not lost against each panel member ({how})",
                    _bars([m["name"] for m in ms], [m["held_rate"] for m in ms], [m["held_lo"] for m in ms],
                          [m["held_hi"] for m in ms], label="held rate per panel member")))
    return out


def html_section(audit: Audit) -> str:
    return render_blocks([block(audit)])


def html_page(audit: Audit) -> str:
    return render("audit.html.j2", audit=audit, figures=figures(audit))


def write(audit: Audit, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "audit.json", folder / "audit.md", folder / "audit.html"]
    for path, text in zip(paths, (audit.to_json(), markdown(audit), html_page(audit)), strict=True):
        atomic.write_text(path, text)
    return paths
