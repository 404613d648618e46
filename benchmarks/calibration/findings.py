"""The per-seed pairs of the published findings (docs/findings/*/results.csv) for the calibration's
resampled cases: each finding's compared arm and its reference, seed by seed, with its margin, the
objective's range and direction."""

from __future__ import annotations

import csv
import json
from pathlib import Path

FINDINGS = {  # folder: compared arm
    "batch_size/fixed-updates": "batch_size=64",
    "batch_size/fixed-games": "batch_size=512",
    "curriculum": "train.phases.0.p_min=0.0 dataset.sampling=stratified",
    "exploiter": "opponent=exploiter",
    "memorisation": "opponent=minimax_first",
}


def pairs(folder: Path, arm: str) -> tuple[list[tuple[float, float]], dict]:
    """(arm, reference) per seed both ran, signed so that larger is better, and the verdict."""
    verdict = json.loads((folder / "verdict.json").read_text())
    metric, ref = verdict["metric"], verdict["reference"]
    sign = 1.0 if verdict.get("direction", "maximize") == "maximize" else -1.0
    by: dict[str, dict[str, float]] = {}
    with (folder / "results.csv").open() as f:
        for row in csv.DictReader(f):
            if row["status"] == "COMPLETE" and row.get(metric):
                by.setdefault(row["condition"], {})[row["seed"]] = sign * float(row[metric])
    common = sorted(set(by[arm]) & set(by[ref]), key=int)
    return [(by[arm][s], by[ref][s]) for s in common], verdict


def all_pairs(root: Path) -> dict[str, tuple[list[tuple[float, float]], dict]]:
    return {name: pairs(root / name, arm) for name, arm in FINDINGS.items()}
