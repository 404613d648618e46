"""CLI start-up and eval-with-tracking benchmarks, against baselines measured in the same run.

    python benchmarks/bench_cli.py [--games N] [--repeats K]

(1) `ttt-lab --help` median wall time beside `mlflow --help`.
(2) eval of a scripted player over N games with tracking off and on (warm store, mlflow
    already imported): games/s and the tracking overhead as a share of the eval time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def median_wall(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def eval_seconds(games: int, tracking: bool, home: Path) -> tuple[float, float, float]:
    from ttt_lab.config.load import load
    from ttt_lab.evaluation.run import run_eval
    from ttt_lab.players.factory import build_player

    loaded = load([f"eval.games={games // 2}", "eval.suite=quick", f"tracking.enabled={str(tracking).lower()}"])
    t = time.perf_counter()
    out = run_eval(loaded, build_player(loaded.cfg))
    return time.perf_counter() - t, out.play_seconds, out.tracking_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    ours = median_wall([str(BIN / "ttt-lab"), "--help"], args.repeats)
    theirs = median_wall([str(BIN / "mlflow"), "--help"], args.repeats)
    print(f"ttt-lab --help  median {ours * 1000:7.0f} ms   (goal < 300 ms)")
    print(f"mlflow --help   median {theirs * 1000:7.0f} ms   ratio ttt-lab/mlflow {ours / theirs:.2f}")

    with tempfile.TemporaryDirectory() as d:
        os.environ["TTT_LAB_HOME"] = d
        t = time.perf_counter()
        from ttt_lab.tracking.store import open_store

        open_store(f"sqlite:///{d}/mlflow.db", f"{d}/mlartifacts")
        print(f"one-time: import mlflow + create store {time.perf_counter() - t:.2f} s (not counted below)")
        eval_seconds(200, True, Path(d))  # warm caches
        off = min(eval_seconds(args.games, False, Path(d))[0] for _ in range(3))
        runs = [eval_seconds(args.games, True, Path(d)) for _ in range(3)]
        on = min(r[0] for r in runs)
        calls = min(r[2] for r in runs)
    print(f"eval {args.games} games, tracking off: {off:.2f} s = {args.games / off:,.0f} games/s (goal >= 5,000)")
    print(f"eval {args.games} games, tracking on : {on:.2f} s = {args.games / on:,.0f} games/s")
    print(f"tracking overhead: {max(on - off, 0):.3f} s = {100 * max(on - off, 0) / on:.1f} % of the eval "
          f"(time inside tracking calls {calls:.3f} s = {100 * calls / on:.1f} %; goal < 10 %)")


if __name__ == "__main__":
    main()
