"""The warm-up's course against its own clock, as an SVG figure: teacher-forced accuracy on the
optimal opponent's positions after each epoch, and each DAgger walk's exact rates (draws against
the optimal opponent, wins and losses against random play), read from a run's `sft_summary.json`
(beside its warm-up checkpoint, `<home>/cache/sft-*/`).

    python docs/findings/real-model/curve.py SFT_SUMMARY [--out curve.svg] [--title TEXT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def series(summary: dict) -> dict[str, list[tuple[float, float, float, float]]]:
    """(minutes, percent) points of each curve the summary holds; a walk without a rate is skipped."""

    def points(rows: list[dict], key: str) -> list[tuple[float, float, float, float]]:
        out = []
        for r in rows:
            if isinstance(r.get(key), int | float) and isinstance(r.get("seconds"), int | float):
                x, y = r["seconds"] / 60, 100 * r[key]
                out.append((x, y, y, y))
        return sorted(out)

    walks = summary.get("dagger", [])
    curves = {"teacher-forced move digit": points(summary.get("accuracy", []), "move"),
              "draws vs optimal (lines)": points(walks, "optimal_draw"),
              "wins vs random (tree)": points(walks, "random_win"),
              "losses vs random (tree)": points(walks, "random_loss")}
    return {k: v for k, v in curves.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary", type=Path)
    ap.add_argument("--out", type=Path, default=Path("curve.svg"))
    ap.add_argument("--title", default="The warm-up's course (percent against minutes into the warm-up)")
    args = ap.parse_args()

    from ttt_lab.report.figures import band_chart

    summary = json.loads(args.summary.read_text())
    walks = [r for r in summary.get("dagger", []) if str(r.get("after", "")).endswith("start")]
    marks = [(r["seconds"] / 60, f"DAgger {r['round']}") for r in walks if "round" in r]
    args.out.write_text(band_chart(args.title, series(summary), "minutes into the warm-up", marks) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
