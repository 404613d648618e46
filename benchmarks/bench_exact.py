"""Exact against sampled evaluation of one model player, measured in the same run.

    python benchmarks/bench_exact.py [--checkpoint DIR] [--games 400]

Without --checkpoint, a warm-up checkpoint of `experiment=tiny_cpu_two_phases` (one SFT epoch, no
DAgger) is trained first (not timed). Timed: `eval.mode=exact` (the greedy policy's tree against
the quick suite and the best response) and `eval.mode=sampled` with `--games` games per opponent,
same player, tracking off. Goal: the exact evaluation costs no more than the sampled one (ratio
<= 1).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def checkpoint(home: Path) -> str:
    from ttt_lab.config.load import load
    from ttt_lab.train.pipeline import train

    loaded = load(["experiment=tiny_cpu_two_phases", "phase=sft", "train.sft.epochs=1", "tracking.enabled=false",
                   f"home={home}"])
    return str(train(loaded).checkpoint)


def timed(path: str, home: Path, mode: str, games: int) -> tuple[float, list]:
    from ttt_lab.config.load import load
    from ttt_lab.evaluation.run import run_eval
    from ttt_lab.players.factory import build_player

    loaded = load(["experiment=tiny_cpu_two_phases", "player=hf", f"model.path={path}", f"eval.mode={mode}",
                   f"games={games}", "eval.suite=quick", "tracking.enabled=false", "eval.transcript=false",
                   f"home={home}"])
    player = build_player(loaded.cfg)
    start = time.perf_counter()
    out = run_eval(loaded, player)
    return time.perf_counter() - start, out.results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint")
    ap.add_argument("--games", type=int, default=400)
    args = ap.parse_args()
    os.environ.setdefault("TTT_LAB_TORCH_THREADS", "2")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = args.checkpoint or checkpoint(home)
        exact_s, exact = timed(path, home, "exact", args.games)
        sampled_s, sampled = timed(path, home, "sampled", args.games)
    for e, s in zip(exact, sampled, strict=False):  # exact adds a last row: the best response
        er, sr = e.summary.outcome_rates(), s.summary.outcome_rates()
        print(f"{e.entry.name:8s} exact draw {100 * er['draw'][0]:.2f} % win {100 * er['win'][0]:.2f} % "
              f"({e.summary.games} lines) | sampled draw {100 * sr['draw'][0]:.1f} % "
              f"[{100 * sr['draw'][1]:.1f}, {100 * sr['draw'][2]:.1f}] win {100 * sr['win'][0]:.1f} %")
    best = exact[-1].summary
    print(f"best response: loss {100 * best.outcome_rates()['loss'][0]:.2f} % (the exploitability), "
          f"{best.games} lines")
    print(f"exact {exact_s:.2f} s, sampled ({args.games} games per opponent) {sampled_s:.2f} s: "
          f"ratio {exact_s / sampled_s:.2f} (goal <= 1)")


if __name__ == "__main__":
    main()
