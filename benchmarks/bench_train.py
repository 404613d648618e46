"""RL training throughput of the tiny model on CPU: games/s (generation + update) and the
share of time spent generating, at batch sizes 64 and 256.

    python benchmarks/bench_train.py [--steps N] [--batch-sizes 64 256]

The baseline measured in the same run is generation alone: the rollout engine playing the
same games without any update, so the ratio shows what the update costs. The first step
of each run (warm-up) is not counted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def measure(base: list[str], start: Path, home: Path, bs: int, steps: int) -> tuple[float, float, float]:
    """(games/s of training, share generating, games/s of generation alone)."""
    import torch
    from transformers import TrainerCallback

    from ttt_lab.config.load import load
    from ttt_lab.train import grpo, rollout
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.phase_data import phase_dataset

    cfg = load([*base, f"batch_size={bs}", f"steps={steps}"]).cfg
    spent = {"gen": 0.0, "t0": 0.0}
    play = rollout.play_rollouts

    def timed(*a, **k):
        t = time.perf_counter()
        out = play(*a, **k)
        spent["gen"] += time.perf_counter() - t
        return out

    class Warm(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if state.global_step == 1:
                spent["gen"], spent["t0"] = 0.0, time.perf_counter()

    grpo.play_rollouts = timed
    try:
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(start), home / f"rl{bs}", callbacks=[Warm()], resume=False)
    finally:
        grpo.play_rollouts = play
    total = time.perf_counter() - spent["t0"]
    model, tok = load_model(str(start), cfg)
    phase = cfg.train.phases[0]
    examples = [e for e in phase_dataset(cfg, phase, 0, 1) for _ in range(phase.num_generations)]
    t = time.perf_counter()
    rollout.play_rollouts(model, tok, examples, cfg.env, grpo.build_opponent(cfg.opponent),
                          rollout.Sampling(1.0, cfg.player.max_new_tokens), generator=torch.Generator())
    return bs * (steps - 1) / total, spent["gen"] / total, len(examples) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--micro", type=int, default=None, help="train.micro_batch_size (default: the config's)")
    args = ap.parse_args()

    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.runtime import quiet, torch_threads
    from ttt_lab.train.sft import run_sft

    quiet()
    torch_threads()
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        base = ["experiment=tiny_cpu", f"home={home}", "tracking.enabled=false", "train.sft.num_games=300",
                "train.sft.epochs=2", *([f"train.micro_batch_size={args.micro}"] if args.micro else [])]
        cfg = load(base).cfg
        start = home / "sft"
        run_sft(cfg, resolve_model_path(cfg), start)
        print(f"{'batch':>6s} {'games/s':>9s} {'generating':>11s} {'generation alone, games/s':>26s}")
        for bs in args.batch_sizes:
            rate, share, gen = measure(base, start, home, bs, args.steps)
            print(f"{bs:6d} {rate:9.1f} {100 * share:10.0f}% {gen:26.1f}")
    print("goal: >= 150 games/s at batch 256 (reference: ~36 games/s for a plain per-turn generate loop)")


if __name__ == "__main__":
    main()
