"""Line charts with a band over seeds, as inline SVG: no plotting library, no script, no network.
The title goes into the SVG's label only: the page prints it once, as the figure's caption."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

PALETTE = ("#4a78c2", "#d1603d", "#3c9d5d", "#8e5ac8", "#c2a03c", "#3cb0c2", "#c23c7a", "#6b6b6b")
W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 260, 52, 170, 24, 36
"""The legend sits in the right margin (PAD_R), outside the plotted area: it never covers data."""


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def band_chart(title: str, series: dict[str, list[tuple[float, float, float, float]]], x_label: str,
               boundaries: Sequence[tuple[float, str]] = ()) -> str:
    """`series[name]` = [(x, mean, low, high), …]; one line per name over its shaded band;
    `boundaries` = [(x, label), …] drawn as dashed vertical lines (where a phase begins)."""
    points = [p for s in series.values() for p in s if all(math.isfinite(v) for v in p)]
    if not points:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="60" role="img" '
                f'aria-label="{html.escape(title)}"><text x="10" y="30" font-size="12">{html.escape(title)}: '
                "no data logged</text></svg>")
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y0, y1 = min(p[2] for p in points), max(p[3] for p in points)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5

    def sx(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * (W - PAD_L - PAD_R)

    def sy(y: float) -> float:
        return H - PAD_B - (y - y0) / (y1 - y0) * (H - PAD_T - PAD_B)

    parts = [f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#888"/>',
             f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#888"/>',
             f'<text x="{(W + PAD_L) / 2}" y="{H - 4}" font-size="11" text-anchor="middle">{html.escape(x_label)}'
             "</text>"]
    for t in _ticks(y0, y1):
        parts.append(f'<text x="{PAD_L - 4}" y="{sy(t) + 4:.1f}" font-size="10" text-anchor="end">{t:.3g}</text>'
                     f'<line x1="{PAD_L}" y1="{sy(t):.1f}" x2="{W - PAD_R}" y2="{sy(t):.1f}" stroke="#eee"/>')
    for t in _ticks(x0, x1):
        parts.append(f'<text x="{sx(t):.1f}" y="{H - PAD_B + 14}" font-size="10" text-anchor="middle">{t:.4g}</text>')
    for x, label in boundaries:
        if x0 < x <= x1:
            parts.append(f'<line class="phase" x1="{sx(x):.1f}" y1="{PAD_T}" x2="{sx(x):.1f}" y2="{H - PAD_B}" '
                         f'stroke="#555" stroke-dasharray="4 3"/><text x="{sx(x) + 3:.1f}" y="{PAD_T + 9}" '
                         f'font-size="9" fill="#555">{html.escape(label)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        pts = [p for p in pts if all(math.isfinite(v) for v in p)]
        if not pts:
            continue
        colour = PALETTE[i % len(PALETTE)]
        upper = " ".join(f"{sx(x):.1f},{sy(hi):.1f}" for x, _, _, hi in pts)
        lower = " ".join(f"{sx(x):.1f},{sy(lo):.1f}" for x, _, lo, _ in reversed(pts))
        parts.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.18" stroke="none"/>')
        line = " ".join(f"{sx(x):.1f},{sy(m):.1f}" for x, m, _, _ in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.6">'
                     f"<title>{html.escape(name)}</title></polyline>")
        parts.append(f'<rect x="{W - PAD_R + 10}" y="{PAD_T + 14 * i}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{W - PAD_R + 24}" y="{PAD_T + 9 + 14 * i}" font-size="10">'
                     f"{html.escape(name[:26])}<title>{html.escape(name)}</title></text>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{html.escape(title)}">{"".join(parts)}</svg>')


def aggregate(curves: list[list[tuple[int, float]]], scale: float = 1.0) -> list[tuple[float, float, float, float]]:
    """Mean and min-max band over seeds at each step logged by every seed; x multiplied by `scale`."""
    if not curves:
        return []
    common = set.intersection(*(set(s for s, _ in c) for c in curves)) if curves else set()
    by_step = [dict(c) for c in curves]
    out = []
    for s in sorted(common):
        vals = [d[s] for d in by_step]
        out.append((s * scale, sum(vals) / len(vals), min(vals), max(vals)))
    return out


def forest_plot(title: str, rows: list[tuple[str, float, float, float, str]], margin: float, unit: float = 100.0,
                *, axis: str = "difference from the reference (points); shaded: ±margin") -> str:
    """One line per comparison: its difference (dot) and interval (bar), with 0 and the ±margin band
    marked; `rows` = [(label, difference, low, high, decision)], values multiplied by `unit`."""
    row_h, left, right = 26, 230, 120
    h = PAD_T + 30 + row_h * max(1, len(rows)) + PAD_B
    vals = [v * unit for _, d, lo, hi, _ in rows for v in (d, lo, hi) if math.isfinite(v)] + [
        -1.5 * margin * unit, 1.5 * margin * unit]
    x0, x1 = min(vals), max(vals)
    pad = 0.05 * (x1 - x0 or 1)
    x0, x1 = x0 - pad, x1 + pad

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (W - left - right)

    top, bottom = PAD_T + 24, h - PAD_B
    parts = [f'<rect x="{sx(-margin * unit):.1f}" y="{top}" width="{sx(margin * unit) - sx(-margin * unit):.1f}" '
             f'height="{bottom - top}" fill="#3c9d5d" fill-opacity="0.12"><title>±margin</title></rect>',
             f'<line x1="{sx(0):.1f}" y1="{top}" x2="{sx(0):.1f}" y2="{bottom}" stroke="#555"/>',
             f'<line x1="{left}" y1="{bottom}" x2="{W - right}" y2="{bottom}" stroke="#888"/>',
             f'<text x="{(left + W - right) / 2}" y="{h - 4}" font-size="11" text-anchor="middle">'
             f"{html.escape(axis)}</text>"]
    for t in _ticks(x0, x1):
        parts.append(f'<text x="{sx(t):.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">{t:.3g}</text>')
    colours = {"differs": "#d1603d", "equivalent": "#3c9d5d", "better on most seeds": "#d1603d",
               "worse on most seeds": "#d1603d"}
    for i, (label, d, lo, hi, decision) in enumerate(rows):
        y = top + row_h * (i + 0.5)
        colour = colours.get(decision, "#6b6b6b")
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{html.escape(label[:34])}<title>{html.escape(label)}</title></text>")
        if all(math.isfinite(v) for v in (d, lo, hi)):
            parts.append(f'<line x1="{sx(lo * unit):.1f}" y1="{y:.1f}" x2="{sx(hi * unit):.1f}" y2="{y:.1f}" '
                         f'stroke="{colour}" stroke-width="2"/><circle cx="{sx(d * unit):.1f}" cy="{y:.1f}" r="4" '
                         f'fill="{colour}"/>')
        parts.append(f'<text x="{W - right + 8}" y="{y + 4:.1f}" font-size="11" fill="{colour}">'
                     f"{html.escape(decision)}</text>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" '
            f'aria-label="{html.escape(title)}">{"".join(parts)}</svg>')


def stacked_bars(title: str, rows: list[tuple[str, dict[str, float]]], order: tuple[str, ...], unit: str = "s"
                 ) -> str:
    """One horizontal bar per row, split into `order`'s parts (a legend on the right); `rows` =
    [(label, {part: value})], every bar on one scale so lengths compare."""
    row_h, left, right = 26, 150, 120
    h = PAD_T + 30 + row_h * max(1, len(rows)) + PAD_B
    longest = max((sum(parts.values()) for _, parts in rows), default=0.0) or 1.0

    def sx(x: float) -> float:
        return left + x / longest * (W - left - right)

    top, bottom = PAD_T + 24, h - PAD_B
    out = [f'<line x1="{left}" y1="{bottom}" x2="{W - right}" y2="{bottom}" stroke="#888"/>',
           f'<text x="{(left + W - right) / 2}" y="{h - 4}" font-size="11" text-anchor="middle">{unit}</text>']
    for t in _ticks(0.0, longest):
        out.append(f'<text x="{sx(t):.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">{t:.3g}</text>')
    for i, (label, parts) in enumerate(rows):
        y, x = top + row_h * i + 4, 0.0
        out.append(f'<text x="{left - 8}" y="{y + 13:.1f}" font-size="11" text-anchor="end">'
                   f"{html.escape(label[:24])}<title>{html.escape(label)}</title></text>")
        for j, name in enumerate(order):
            v = parts.get(name, 0.0)
            if v > 0:
                out.append(f'<rect x="{sx(x):.1f}" y="{y:.1f}" width="{sx(x + v) - sx(x):.1f}" height="{row_h - 8}" '
                           f'fill="{PALETTE[j % len(PALETTE)]}"><title>{html.escape(name)}: {v:.1f} {unit}'
                           "</title></rect>")
                x += v
    for j, name in enumerate(order):
        y = top + 14 * j + 10
        out.append(f'<rect x="{W - right + 10}" y="{y - 9}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
                   f'<text x="{W - right + 24}" y="{y}" font-size="11">{html.escape(name)}</text>')
    h = max(h, top + 14 * len(order) + 10)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" '
            f'aria-label="{html.escape(title)}">{"".join(out)}</svg>')
