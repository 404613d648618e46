"""The per-seed pairs of the published findings (docs/findings/*/results.csv), for the calibration's
resampled shapes: each finding's compared arm and its reference, seed by seed, with its margin and
the objective's range."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ttt_lab.stats.simulate import Shape, resampled

FINDINGS = {  # folder: (compared arm, bounds)
    "batch_size/fixed-updates": ("batch_size=256", (0.0, 1.0)),
    "batch_size/fixed-games": ("batch_size=512", (0.0, 1.0)),
    "curriculum": ("train.phases.0.p_min=0.0 dataset.sampling=stratified", (0.0, 1.0)),
    "exploiter": ("opponent=exploiter", (0.0, 1.0)),
    "memorisation": ("opponent=minimax_first", (-1.0, 1.0)),
}


def pairs(folder: Path, arm: str) -> tuple[list[tuple[float, float]], float, str]:
    """(arm, reference) per seed both ran, the finding's margin and its metric."""
    verdict = json.loads((folder / "verdict.json").read_text())
    metric, ref = verdict["metric"], verdict["reference"]
    by: dict[str, dict[str, float]] = {}
    with (folder / "results.csv").open() as f:
        for row in csv.DictReader(f):
            if row["status"] == "COMPLETE" and row.get(metric):
                by.setdefault(row["condition"], {})[row["seed"]] = float(row[metric])
    common = sorted(set(by[arm]) & set(by[ref]), key=int)
    return [(by[arm][s], by[ref][s]) for s in common], float(verdict["margin"]), metric


def shapes(root: Path) -> list[Shape]:
    out = []
    for name, (arm, bounds) in FINDINGS.items():
        got, margin, _ = pairs(root / name, arm)
        out.append(Shape(f"{name} resampled", margin, resampled(got), bounds))
    return out
