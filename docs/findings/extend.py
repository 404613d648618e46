"""Add a finding's new seeds: the rows of a study run on more seeds of the same design (the same
study file, `seed=...` and `--name` on the command line) appended to the finding's results.csv,
after checking that each new row is a trial of that design (its config hash is the hash the study
file's overrides compose to) on a seed the finding has not run. Under anytime decisions the
answer then stays valid however many seeds are added (docs/design/statistics.md); rerun
redecide.py after it.

    .venv/bin/python docs/findings/extend.py FOLDER STUDY NEW_RESULTS_CSV
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from ttt_lab.config.load import load
from ttt_lab.studies.spec import from_file

ROOT = Path(__file__).resolve().parents[2]


def main(folder: str, study: str, new: Path) -> int:
    spec = from_file(ROOT / "sweeps" / f"{study}.yaml", [])
    path = ROOT / "docs" / "findings" / folder / "results.csv"
    with path.open() as f:
        old = list(csv.DictReader(f))
    with new.open() as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "COMPLETE"]
    seen = {(r["condition"], r["seed"]) for r in old}
    for r in rows:
        if (r["condition"], r["seed"]) in seen:
            sys.exit(f"{r['condition']} seed {r['seed']} is in {path} already: a seed is added once.")
        want = load([*spec.overrides, *r["overrides"].split()]).config_hash
        if r["config_hash"] != want:
            sys.exit(f"{r['overrides']}: config hash {r['config_hash']}, but the study file composes {want}: "
                     "not the finding's design.")
    keys = list(dict.fromkeys([*old[0].keys(), *(k for r in rows for k in r)]))
    start = 1 + max(int(r["trial"]) for r in old)
    for i, r in enumerate(rows):
        r["trial"] = str(start + i)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, restval="")
        w.writeheader()
        w.writerows([*old, *rows])
    print(f"{path.relative_to(ROOT)}: {len(rows)} rows added, seeds {sorted({int(r['seed']) for r in rows})}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
