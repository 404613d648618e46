"""Eval outputs as files: the transcript JSONL and the CSV table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from ttt_lab.evaluation.suite import SuiteResult

CSV_FIELDS = ("opponent", "mode", "games", "win_rate", "win_lo", "win_hi", "draw_rate", "draw_lo", "draw_hi",
              "loss_rate", "loss_lo", "loss_hi", "invalid_rate", "format_rate", "mean_turns", "reward",
              "games_per_s")


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
