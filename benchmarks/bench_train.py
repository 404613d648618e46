"""Training throughput of the tiny model on CPU, two modes in one run: the baseline (the fp32
eager engine on the word-level tokenizer, as before the fast path: `model.tokens=words`) and
what the defaults choose here (`train.precision=auto train.compile=auto`, the default tokenizer
`model.tokens=rows`; plus any --fast overrides):
SFT warm-up games/s, RL games/s (generation + update) at batch sizes 64 and 256, their ratio,
the share of an RL step spent generating, and generation alone (the rollout engine playing the
same games without an update).

    python benchmarks/bench_train.py [--steps N] [--batch-sizes 64 256] [--fast model.hidden_size=64 ...]
                                     [--full-warm-up]

The first RL step of each run (warm-up) is not counted. RL starts from a short warm-up (300
games) unless `--full-warm-up` trains tiny_cpu's own, the model tiny_cpu's RL really starts from:
it writes shorter, cleaner games, so its steps are faster.
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


MODES = {"baseline": ["train.precision=fp32", "train.compile=false", "model.tokens=words"],
         "auto": ["train.precision=auto", "train.compile=auto"]}
"""baseline: the fp32 eager engine on the word-level tokenizer, as it was before the fast path;
auto: what the defaults choose on this machine (plus --fast overrides)."""


def run_mode(name: str, base: list[str], home: Path, args) -> dict:
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.runtime import use_bf16, use_compile
    from ttt_lab.train.sft import run_sft

    cfg = load(base).cfg
    start = home / f"sft-{name}"
    t = time.perf_counter()
    info = run_sft(cfg, resolve_model_path(cfg), start)
    sft_rate = info["kept"] * cfg.train.sft.epochs / (time.perf_counter() - t)
    rl = {bs: measure(base, start, home / name, bs, args.steps) for bs in args.batch_sizes}
    return {"sft": sft_rate, "rl": rl, "bf16": use_bf16(cfg), "compile": use_compile(cfg), "tokens": cfg.model.tokens}


def _choices(overrides: list[str]) -> tuple[bool, bool, str]:
    from ttt_lab.config.load import load
    from ttt_lab.train.runtime import use_bf16, use_compile

    cfg = load(overrides).cfg
    return use_bf16(cfg), use_compile(cfg), cfg.model.tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--micro", type=int, default=None, help="train.micro_batch_size (default: the config's)")
    ap.add_argument("--fast", nargs="*", default=[], help="overrides added to the auto mode (e.g. a smaller model)")
    ap.add_argument("--full-warm-up", action="store_true",
                    help="measure on tiny_cpu's own warm-up (the model RL starts from; ~5 min more) instead of a "
                         "short one of 300 games, whose weaker model writes longer games")
    args = ap.parse_args()

    from ttt_lab.train.runtime import quiet, torch_threads

    quiet()
    torch_threads()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        base = ["experiment=tiny_cpu", f"home={home}", "tracking.enabled=false",
                *([] if args.full_warm_up else ["train.sft.num_games=300", "train.sft.teacher_trees=0",
                                                "train.sft.epochs=2"]),
                *([f"train.micro_batch_size={args.micro}"] if args.micro else [])]
        modes = {name: [*base, *extra, *(args.fast if name == "auto" else [])] for name, extra in MODES.items()}
        same = not args.fast and _choices(modes["auto"]) == _choices(modes["baseline"])
        for name, overrides in modes.items():
            results[name] = results["baseline"] if same and name == "auto" else run_mode(name, overrides, home, args)
    b, a = results["baseline"], results["auto"]
    print(f"auto chose: bf16={a['bf16']}, compile={a['compile']}, model.tokens={a['tokens']}; "
          f"--fast overrides: {' '.join(args.fast) or 'none'}")
    if same:
        print("auto runs the baseline's settings on this machine: measured once (ratio 1 by construction)")
    heads = ("baseline", "auto", "ratio", "generating (auto)", "generation alone")
    print(f"{'':14s} {heads[0]:>10s} {heads[1]:>10s} {heads[2]:>7s} {heads[3]:>18s} {heads[4]:>17s}")
    print(f"{'SFT games/s':14s} {b['sft']:10.1f} {a['sft']:10.1f} {a['sft'] / b['sft']:6.2f}x")
    for bs in args.batch_sizes:
        (rb, _, _), (ra, share, gen) = b["rl"][bs], a["rl"][bs]
        label = f"RL @{bs} games/s"
        print(f"{label:14s} {rb:10.1f} {ra:10.1f} {ra / rb:6.2f}x {100 * share:17.0f}% {gen:17.1f}")
    print("goal: >= 150 games/s at batch 256 and >= 4x the baseline; SFT >= 2x")


if __name__ == "__main__":
    main()
