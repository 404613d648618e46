"""Eval outputs: the rich table, the transcript JSONL, the CSV table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from ttt_lab.evaluation.suite import SuiteResult

CSV_FIELDS = ("opponent", "games", "win_rate", "win_lo", "win_hi", "draw_rate", "draw_lo", "draw_hi",
              "loss_rate", "loss_lo", "loss_hi", "invalid_rate", "format_rate", "mean_turns", "reward",
              "games_per_s")


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def cell(rate: float, lo: float, hi: float) -> str:
    return f"{pct(rate)} [{pct(lo)}, {pct(hi)}]"


def table(results: Sequence[SuiteResult], title: str) -> Table:
    t = Table(title=title, caption="rates in %, [95 % Wilson interval]; invalid = invalid moves per model message")
    for col in ("opponent", "games", "win", "draw", "loss", "invalid", "format", "turns", "games/s"):
        t.add_column(col, justify="left" if col == "opponent" else "right")
    for r in results:
        s = r.summary
        t.add_row(
            s.opponent, str(s.games),
            cell(s.rate(s.wins), *s.interval(s.wins)),
            cell(s.rate(s.draws), *s.interval(s.draws)),
            cell(s.rate(s.losses), *s.interval(s.losses)),
            pct(s.invalid_rate), pct(s.format_rate), f"{s.model_turns_mean:.2f}", f"{s.games_per_s:,.0f}",
        )
    return t


def rows(results: Sequence[SuiteResult]) -> list[dict[str, float | str]]:
    out = []
    for r in results:
        s = r.summary
        row: dict[str, float | str] = {"opponent": s.opponent, "games": s.games}
        for name, k in (("win", s.wins), ("draw", s.draws), ("loss", s.losses)):
            lo, hi = s.interval(k)
            row |= {f"{name}_rate": s.rate(k), f"{name}_lo": lo, f"{name}_hi": hi}
        row |= {"invalid_rate": s.invalid_rate, "format_rate": s.format_rate, "mean_turns": s.model_turns_mean,
                "reward": s.reward_mean, "games_per_s": s.games_per_s}
        out.append(row)
    return out


def csv_text(results: Sequence[SuiteResult]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    w.writeheader()
    w.writerows(rows(results))
    return buf.getvalue()


def write_transcript(path: Path, results: Sequence[SuiteResult]) -> Path:
    """One JSON line per game, with the suite entry it was played against."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    with tmp.open("w", encoding="utf-8") as f:
        for r in results:
            head = '{"opponent":' + json.dumps(r.entry.name) + ","
            for rec in r.records:
                f.write(head + rec.to_json()[1:] + "\n")
    tmp.replace(path)
    return path
