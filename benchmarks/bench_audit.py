"""Opponent-audit benchmark: the whole `ttt-lab audit opponent` command, against baselines
measured in the same run.

    python benchmarks/bench_audit.py [--repeats K]

(1) `ttt-lab audit opponent` (all 4,520 positions to move from, 64 seeds each, the noise,
    consistency and symmetry checks, a fresh-process replay) as a user runs it: wall time
    with tracking on (warm SQLite store) and off. Goal: under 5 s.
(2) Baseline: the plain loop a user would write for the tie-break check alone — ask
    `reply(board, seed)` for every position and seed and count — and `ttt-lab --help`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent / "ttt-lab"


def median_wall(cmd: list[str], repeats: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def naive_tie_break_loop(seeds: int) -> float:
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.game.solver import table

    t0 = time.perf_counter()
    t = table()
    opponent = MinimaxOpponent()
    counts = []
    for s, board in enumerate(t.boards):
        if not t.terminal[s]:
            counts.append(Counter(opponent.reply(board, seed) for seed in range(seeds)))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, TTT_LAB_HOME=home)
        subprocess.run([str(BIN), "audit", "opponent"], capture_output=True, env=env, check=False)  # create store
        on = median_wall([str(BIN), "audit", "opponent"], args.repeats, env)
        off = median_wall([str(BIN), "audit", "opponent", "tracking.enabled=false"], args.repeats, env)
        first = median_wall([str(BIN), "audit", "opponent", "tie_break=first", "tracking.enabled=false"],
                            args.repeats, env)
        helps = median_wall([str(BIN), "--help"], args.repeats, env)
    naive = min(naive_tie_break_loop(64) for _ in range(3))
    print(f"ttt-lab audit opponent, tracking on   median {on:6.2f} s   (goal < 5 s)")
    print(f"ttt-lab audit opponent, tracking off  median {off:6.2f} s")
    print(f"  same, tie_break=first (FAILs)       median {first:6.2f} s")
    print(f"baseline: plain reply() loop, tie-break counts only, in-process {naive:6.2f} s; "
          f"ttt-lab --help {helps:.2f} s")
    print(f"ratio full audit (tracking off) / plain tie-break loop: {off / naive:.2f}; "
          f"audit minus CLI start-up: {off - helps:.2f} s")


if __name__ == "__main__":
    main()
