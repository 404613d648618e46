"""Sweep orchestration benchmark: 20 trials of a near no-op training budget with 2 workers,
tracking on, against a baseline measured in the same run.

    python benchmarks/bench_sweep.py [--trials N] [--workers W] [--launcher]

A near no-op trial: `experiment=smoke` (no warm-up, one RL step of 8 games: a configuration that
trains nothing is refused), so a trial is the trial's config, its MLflow child run, loading the
micro model, one step and its exact evaluation. Baseline: the same trial body (load config, load
model, evaluate) called in a plain loop in one process, no Optuna, no MLflow. Per-trial orchestration overhead: the
wall time an extra trial adds (a sweep of N minus a sweep of N/2 trials, divided by N/2,
so worker start-up cancels out), times the workers, minus the baseline trial.

With --launcher, the same two sweeps again with the workers started by submitit's local
executor (`--launcher slurm launcher.cluster=local --wait`, the SLURM code path): the
extra wall time per trial of going through submitit, against the process pool.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent / "ttt-lab"
NOOP = ["experiment=smoke"]


def baseline(trials: int, home: str) -> float:
    os.environ["TTT_LAB_HOME"] = home
    os.environ["TTT_LAB_TORCH_THREADS"] = "1"
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.evaluate import evaluate_model
    from ttt_lab.train.runtime import torch_threads

    torch_threads()
    loaded = load([*NOOP, "seed=0"])
    load_model(resolve_model_path(loaded.cfg), loaded.cfg)  # warm: model built and cached
    t = time.perf_counter()
    for seed in range(trials):
        cfg = load([*NOOP, f"seed={seed}"]).cfg
        model, tok = load_model(resolve_model_path(cfg), cfg)
        evaluate_model(model, tok, cfg, cfg.eval.games)
    return time.perf_counter() - t


LAUNCHER = ["--launcher", "slurm", "launcher.cluster=local", "launcher.poll_s=0.5", "--wait"]


def sweep_wall(trials: int, workers: int, env: dict[str, str], name: str,
               launcher: bool = False) -> tuple[float, list[float]]:
    cmd = [str(BIN), "sweep", *NOOP, f"seed=range(0,{trials})", "--workers", str(workers), "--name", name,
           *(LAUNCHER if launcher else [])]
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    done = re.findall(r"COMPLETE in ([\d.]+) s" if not launcher else r"trial \d+ COMPLETE", out.stdout)
    assert len(done) == trials, out.stdout[-2000:]
    return wall, [] if launcher else [float(x) for x in done]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--launcher", action="store_true", help="also through submitit's local executor")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, TTT_LAB_HOME=home)
        subprocess.run([str(BIN), "eval", "player=random", "games=2", "eval.suite=quick"], env=env,
                       capture_output=True, check=True)  # create the MLflow store (one-time migrations)
        base = baseline(args.trials, home) / args.trials
        small, _ = sweep_wall(args.trials // 2, args.workers, env, "bench-small")
        wall, trial_s = sweep_wall(args.trials, args.workers, env, "bench")
        if args.launcher:
            l_small, _ = sweep_wall(args.trials // 2, args.workers, env, "bench-l-small", launcher=True)
            l_wall, _ = sweep_wall(args.trials, args.workers, env, "bench-l", launcher=True)
    marginal = (wall - small) / (args.trials - args.trials // 2)  # wall seconds per extra trial: no start-up
    per_worker_trial = marginal * args.workers
    warm = sorted(trial_s)[: -args.workers]  # each worker's first trial pays its imports
    print(f"{args.trials} no-op trials, {args.workers} workers, tracking on: {wall:.1f} s wall "
          f"({args.trials // 2} trials: {small:.1f} s; the difference is start-up free)")
    print(f"  each extra trial costs {marginal:.2f} s of wall time = {per_worker_trial:.2f} s of one worker; "
          f"inside run_trial (child run, training, evaluation, tell): median {warm[len(warm) // 2]:.2f} s")
    print(f"baseline: the same trial body in a plain loop, one process, no Optuna/MLflow: {base:.2f} s per trial")
    print(f"orchestration overhead per trial with warm workers: {per_worker_trial - base:.2f} s (goal < 0.5 s); "
          f"ratio {per_worker_trial / base:.2f} x the bare trial")

    if args.launcher:
        l_marginal = (l_wall - l_small) / (args.trials - args.trials // 2)
        print(f"through submitit's local executor: {l_wall:.1f} s wall ({args.trials // 2} trials: {l_small:.1f} s) "
              f"against {wall:.1f} s for the pool, ratio {l_wall / wall:.2f}; each extra trial {l_marginal:.2f} s of "
              f"wall time ({l_marginal - marginal:+.2f} s against the pool)")


if __name__ == "__main__":
    main()
