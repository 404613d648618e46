"""The warm-up's table as the finding prints it, read from a run's `sft_summary.json` (beside its
warm-up checkpoint, `<home>/cache/sft-*/`): the last epoch, then each DAgger round, each row with
the walk that followed it, so no number is copied by hand.

    python docs/findings/real-model/table.py SFT_SUMMARY

A pass's seconds are its training's own (the diagnostic after it left out); `s` is the warm-up's
clock when the row's last pass was measured.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

HEADER = ["| after | s | move digit (teacher-forced) | vs optimal: draws (moving second) | vs random (exact) "
          "| invalid lines | value-losing replies / positions: trained |", "|---|---:|---:|---|---|---:|---|"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _walk(row: dict) -> list[str]:
    """A whole-tree walk's cells: draws against the optimal opponent, the random rates, invalid lines,
    what it found to correct (none for the last walk) and how long it took."""
    rates = "/".join(f"{100 * row[f'random_{k}']:.1f}" for k in ("win", "draw", "loss"))
    trained = f": {row['corrections']:.0f}" if str(row["after"]).endswith("start") else ""
    found = f"{row['mistakes']:.0f} / {row['turns']:,.0f}{trained} (walked in {row['walk_seconds']:.0f} s)"
    return [f"{_pct(row['optimal_draw'])} ({_pct(row['optimal_draw_second'])})", rates,
            f"{row['invalid_lines']:.0f}", found]


def rows(summary: dict) -> list[str]:
    """The table's lines: the last epoch with the first walk, then a line per round with the next walk."""
    curve, walks = summary.get("accuracy", []), [w for w in summary.get("dagger", []) if "walk_seconds" in w]
    epochs = [p for p in curve if p["after"].startswith("epoch")]
    out = list(HEADER)
    if epochs and walks:
        e = epochs[-1]
        out.append("| " + " | ".join([e["after"], f"{e['seconds']:,.0f}", _pct(e["move"]), *_walk(walks[0])]) + " |")
    prev = epochs[-1]["train_seconds"] if epochs else 0.0
    for walk, after in itertools.pairwise(walks):
        k = walk["round"]
        passes = [p for p in curve if p["after"].startswith(f"DAgger {k} epoch")]
        if not passes:
            continue
        took = []
        for p in passes:
            took.append(f"{p['train_seconds'] - prev:.0f}")
            prev = p["train_seconds"]
        what = f"round {k}: {len(passes)} passes over {walk['pool']} corrections ({', '.join(took)} s)"
        moves = " → ".join(_pct(p["move"]) for p in passes)
        out.append("| " + " | ".join([what, f"{passes[-1]['seconds']:,.0f}", moves, *_walk(after)]) + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary", type=Path)
    args = ap.parse_args()
    print("\n".join(rows(json.loads(args.summary.read_text()))))


if __name__ == "__main__":
    main()
