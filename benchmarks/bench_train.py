"""Training throughput of the tiny model on CPU, two modes in one run: the baseline (the fp32
eager engine on the word-level tokenizer with SDPA attention, as before the fast path:
`model.tokens=words model.attention=sdpa`) and what the defaults choose here
(`train.precision=auto train.compile=auto model.attention=auto`, the default tokenizer
`model.tokens=rows`; plus any --fast overrides):
SFT warm-up games/s, RL games/s (generation + update) at batch sizes 64 and 256, their ratio,
the share of an RL step spent generating, and generation alone (the rollout engine playing the
same games without an update, sampling as training does).

    python benchmarks/bench_train.py [--steps N] [--batch-sizes 64 256] [--fast model.hidden_size=64 ...]
                                     [--short-warm-up]

Each mode's RL (the first phase of `experiment=tiny_cpu_two_phases`: minimax opponents of every
strength, what these rates have always measured) starts from its own warm-up of that recipe, or
from a short one of 300 games with --short-warm-up (a weaker model: longer games,
slower steps). RL games/s is the batch size over the median step (the first step, a warm-up, is
not counted; the phase saves no checkpoint before its last step): this shared machine's speed
drifts by 10-20 % between steps, and a median is what two runs can compare.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def measure(base: list[str], start: Path, home: Path, bs: int, steps: int) -> tuple[float, float, float]:
    """(games/s of training over the median step, share generating, games/s of generation alone)."""
    import statistics

    from transformers import TrainerCallback

    from ttt_lab.config.load import load
    from ttt_lab.engine import rollout
    from ttt_lab.engine.precision import use_bf16
    from ttt_lab.train import grpo, grpo_rollout
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.phase_data import phase_dataset

    cfg = load([*base, f"batch_size={bs}", f"steps={steps}", "train.saves_per_phase=1"]).cfg
    gen, step, began = [], [], []
    play = grpo_rollout.play_rollouts

    def timed(*a, **k):
        t = time.perf_counter()
        out = play(*a, **k)
        gen.append(time.perf_counter() - t)
        return out

    class Steps(TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            began.append(time.perf_counter())

        def on_step_end(self, a, state, control, **kw):
            step.append(time.perf_counter() - began[-1])

    grpo_rollout.play_rollouts = timed
    try:
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(start), home / f"rl{bs}", callbacks=[Steps()], resume=False)
    finally:
        grpo_rollout.play_rollouts = play
    step, gen = step[1:], gen[1:]
    model, tok = load_model(str(start), cfg)
    phase = cfg.train.phases[0]
    examples = [e for e in phase_dataset(cfg, phase, 0, 1) for _ in range(phase.num_generations)]
    t = time.perf_counter()
    rollout.play_rollouts(model, tok, examples, cfg.env, grpo_rollout.phase_players(cfg, phase)[0],
                          rollout.Sampling(1.0, cfg.player.max_new_tokens, use_bf16(cfg)), sampling_seed=cfg.seed,
                          game_ids=list(range(len(examples))))
    return bs / statistics.median(step), sum(gen) / sum(step), len(examples) / (time.perf_counter() - t)


MODES = {"baseline": ["train.precision=fp32", "train.compile=false", "model.tokens=words", "model.attention=sdpa"],
         "auto": ["train.precision=auto", "train.compile=auto", "model.attention=auto"]}
"""baseline: the fp32 eager engine on the word-level tokenizer, as it was before the fast path;
auto: what the defaults choose on this machine (plus --fast overrides)."""


def run_mode(name: str, base: list[str], home: Path, args) -> dict:
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.sft import run_sft

    cfg = load(base).cfg
    start = home / f"sft-{name}"
    t = time.perf_counter()
    info = run_sft(cfg, resolve_model_path(cfg), start)
    sft_rate = info["kept"] * cfg.train.sft.epochs / (time.perf_counter() - t)
    rl = {bs: measure(base, start, home / name, bs, args.steps) for bs in args.batch_sizes}
    return {"sft": sft_rate, "rl": rl, "choices": _choices(base)}


def _choices(overrides: list[str]) -> dict:
    from ttt_lab.config.load import load
    from ttt_lab.train.runtime import resolve

    cfg = load(overrides).cfg
    runtime = resolve(cfg)
    return {"bf16": runtime.bf16, "compile": runtime.compile, "model.tokens": cfg.model.tokens,
            "attention": runtime.attention}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--micro", type=int, default=None, help="train.micro_batch_size (default: the config's)")
    ap.add_argument("--fast", nargs="*", default=[], help="overrides added to the auto mode (e.g. a smaller model)")
    ap.add_argument("--short-warm-up", action="store_true",
                    help="measure RL from a short warm-up of 300 games (a weaker model that writes longer games) "
                         "instead of the recipe's own, the model its RL starts from")
    args = ap.parse_args()

    from ttt_lab.train.runtime import quiet, torch_threads

    quiet()
    torch_threads()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        base = ["experiment=tiny_cpu_two_phases", f"home={home}", "tracking.enabled=false",
                *(["train.sft.num_games=300", "train.sft.teacher_trees=0", "train.sft.epochs=2"]
                  if args.short_warm_up else []),
                *([f"train.micro_batch_size={args.micro}"] if args.micro else [])]
        modes = {name: [*base, *extra, *(args.fast if name == "auto" else [])] for name, extra in MODES.items()}
        same = not args.fast and _choices(modes["auto"]) == _choices(modes["baseline"])
        for name, overrides in modes.items():
            results[name] = results["baseline"] if same and name == "auto" else run_mode(name, overrides, home, args)
    b, a = results["baseline"], results["auto"]
    print(f"auto chose: {', '.join(f'{k}={v}' for k, v in a['choices'].items())}; "
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
    print("goal: >= 300 games/s at batch 256 and >= 4x the baseline; SFT >= 2x")


if __name__ == "__main__":
    main()
