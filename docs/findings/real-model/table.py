"""The warm-up's table as the finding prints it, read from a run's `sft_summary.json` (beside its
warm-up checkpoint, `<home>/cache/sft-*/`): the last epoch, then each DAgger round, each row with
the walk that followed it, then the weights the warm-up ends with, so no number is copied by hand.

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


def _rates(row: dict) -> list[str]:
    """A walk's rates: draws against the optimal opponent (moving second), the random rates, invalid lines."""
    rates = "/".join(f"{100 * row[f'random_{k}']:.1f}" for k in ("win", "draw", "loss"))
    return [f"{_pct(row['optimal_draw'])} ({_pct(row['optimal_draw_second'])})", rates, f"{row['invalid_lines']:.0f}"]


def _walk(row: dict, trained: bool) -> list[str]:
    """A whole-tree walk's cells: its rates, what it found to correct (and how many corrections the
    passes after it trained on) and how long it took."""
    count = f": {row['corrections']:.0f}" if trained else ""
    return [*_rates(row), f"{row['mistakes']:.0f} / {row['turns']:,.0f}{count} (walked in {row['walk_seconds']:.0f} s)"]


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def rows(summary: dict) -> list[str]:
    """The table's lines: the last epoch with the first walk, a line per round with the walk after
    its passes, and the weights the warm-up ends with. Whole-tree rounds only (`dagger_tree`)."""
    curve, dagger = summary.get("accuracy", []), summary.get("dagger", [])
    walks = [w for w in dagger if "walk_seconds" in w]
    if any("random_win" not in w for w in walks):
        raise SystemExit("table.py reads whole-tree DAgger walks (train.sft.dagger_tree=true); this summary has none")
    epochs = [p for p in curve if p["after"].startswith("epoch")]

    def passes(walk: dict) -> list[dict]:
        return [p for p in curve if "round" in walk and p["after"].startswith(f"DAgger {walk['round']} epoch")]

    out = list(HEADER)
    if epochs:
        e = epochs[-1]
        first = _walk(walks[0], bool(passes(walks[0]))) if walks else ["", "", "", ""]
        out.append(_line([e["after"], f"{e['seconds']:,.0f}", _pct(e["move"]), *first]))
    prev = epochs[-1]["train_seconds"] if epochs else 0.0
    for walk, after in itertools.pairwise(walks):
        done = passes(walk)
        if not done:  # a round with nothing to train (an empty pool) ran no pass
            continue
        took = []
        for p in done:
            took.append(f"{p['train_seconds'] - prev:.0f}")
            prev = p["train_seconds"]
        what = f"round {walk['round']}: {len(done)} passes over {walk['pool']} corrections ({', '.join(took)} s)"
        moves = " → ".join(_pct(p["move"]) for p in done)
        out.append(_line([what, f"{done[-1]['seconds']:,.0f}", moves, *_walk(after, bool(passes(after)))]))
    end = [r for r in dagger if r.get("kept")]
    if end:
        r = end[-1]
        out.append(_line([f"the warm-up ends: the weights walked at {r['kept']}", f"{r['seconds']:,.0f}", "",
                          *_rates(r), ""]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary", type=Path)
    args = ap.parse_args()
    print("\n".join(rows(json.loads(args.summary.read_text()))))


if __name__ == "__main__":
    main()
