"""The chance that `make run` decides: the quickstart's question (sweeps/quickstart.yaml) at its one
declared look, computed from the per-seed results of every run of the same configuration, machine
by machine.

    python benchmarks/quickstart_chance.py [results.csv ...]

Each results.csv (default: the memorisation finding, run on an AMD EPYC, and the quickstart's own
run in docs/findings/quickstart) gives the seeds on which the first-choice arm's gap was larger,
smaller or tied. The chance is the posterior predictive one (a uniform prior on the probability
that a seed favours the first-choice arm, updated by every seed seen) that the quickstart's nine
seeds fall in the decision region of its exact sign test, read off the package's own rule."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
from scipy.stats import betabinom

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ttt_lab.stats import rules
from ttt_lab.stats.design import FIXED, Design
from ttt_lab.studies.spec import from_file

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "docs/findings/memorisation/results.csv", ROOT / "docs/findings/quickstart/results.csv"]


def signs(path: Path, metric: str, arm: str, reference: str) -> tuple[int, int, int]:
    """(seeds where the arm's objective is larger, smaller, equal) over the seeds both ran."""
    by: dict[str, dict[str, float]] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            if row["status"] == "COMPLETE" and row.get(metric):
                by.setdefault(row["condition"], {})[row["seed"]] = float(row[metric])
    common = set(by.get(arm, {})) & set(by.get(reference, {}))
    d = [by[arm][s] - by[reference][s] for s in common]
    return sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d)


def chance(larger: int, smaller: int, seeds: int, design: Design) -> float:
    """P(the sign test at one look of `seeds` decides) under the posterior predictive."""
    k = np.arange(seeds + 1)
    s = np.array([[1.0] * int(j) + [0.0] * int(seeds - j) for j in k])
    codes, _ = rules.sign_test(s[:, None, :], design.improvement_alpha, [seeds])
    decided = codes[:, 0, 0] != rules.UNRESOLVED
    return float(betabinom.pmf(k, seeds, 1 + larger, 1 + smaller)[decided].sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", type=Path, default=DEFAULT)
    args = ap.parse_args()
    spec = from_file(ROOT / "sweeps/quickstart.yaml", [])
    seeds = len(spec.params["seed"].split(","))
    design = Design(FIXED, looks=tuple(spec.looks or [seeds]))
    metric = spec.objectives[0].metric
    reference = spec.baseline
    arm = next(f"opponent={v}" for v in spec.params["opponent"].split(",") if f"opponent={v}" != reference)
    total = [0, 0, 0]
    for path in args.results:
        if not path.exists():
            print(f"{path}: missing (skipped)")
            continue
        got = signs(path, metric, arm, reference)
        total = [a + b for a, b in zip(total, got, strict=True)]
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {arm} larger on {got[0]}, smaller "
              f"on {got[1]}, tied on {got[2]}; chance {chance(got[0], got[1], seeds, design):.3f}")
    print(f"all runs: larger on {total[0]}, smaller on {total[1]}, tied on {total[2]}; chance that {seeds} seeds "
          f"decide at the quickstart's look: {chance(total[0], total[1], seeds, design):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
