"""Eval outputs: the rich table, the transcript JSONL, the CSV table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from ttt_lab.evaluation.suite import SuiteResult
from ttt_lab.formats import pct

CSV_FIELDS = ("opponent", "mode", "games", "win_rate", "win_lo", "win_hi", "draw_rate", "draw_lo", "draw_hi",
              "loss_rate", "loss_lo", "loss_hi", "invalid_rate", "format_rate", "mean_turns", "reward",
              "games_per_s")


def cell(rate: float, lo: float, hi: float) -> str:
    return f"{pct(rate)} [{pct(lo)}, {pct(hi)}]"


def rate_cell(rate: float, lo: float, hi: float, exact: bool) -> str:
    """A sampled rate with its interval; an exact one alone, or with its bounds where the tree was cut."""
    if exact and hi - lo < 5e-7:
        return pct(rate)
    return cell(rate, lo, hi)


def caption(exact: bool) -> str:
    if exact:
        return ("exact expected rates in % (the policy's game tree walked, every opponent reply weighted by its "
                "probability: no sampling interval; lower and upper bounds where paths were left unexplored); "
                "invalid = invalid moves per model message; games = distinct lines reached")
    return "rates in %, [95 % Wilson interval]; invalid = invalid moves per model message"


def table(results: Sequence[SuiteResult], title: str) -> Table:
    exact = bool(results) and results[0].summary.mode == "exact"
    t = Table(title=title, caption=caption(exact))
    for col in ("opponent", "games", "win", "draw", "loss", "invalid", "format", "turns", "games/s"):
        t.add_column(col, justify="left" if col == "opponent" else "right")
    for r in results:
        s = r.summary
        rates = s.outcome_rates()
        t.add_row(
            s.opponent, str(s.games), *(rate_cell(*rates[k], exact) for k in ("win", "draw", "loss")),
            pct(s.invalid_rate), pct(s.format_rate), f"{s.model_turns_mean:.2f}", f"{s.games_per_s:,.0f}",
        )
    return t


def rows(results: Sequence[SuiteResult]) -> list[dict[str, float | str]]:
    out = []
    for r in results:
        s = r.summary
        row: dict[str, float | str] = {"opponent": s.opponent, "mode": s.mode, "games": s.games}
        for name, (rate, lo, hi) in s.outcome_rates().items():
            row |= {f"{name}_rate": rate, f"{name}_lo": lo, f"{name}_hi": hi}
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
