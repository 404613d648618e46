"""Does a DAgger pass through frozen prompts learn per update as one through frozen contexts does,
and what does each epoch cost? One command, both passes in the same run:

    python benchmarks/bench_frozen_learning.py [--epochs 3] [--modes context,prompt] [--fp32]

From SmolLM2-135M's base weights (the packaged GGUF, converted once into a temporary home), each
mode trains `--epochs` shuffled epochs over every single-reply position of the deterministic
teacher's games against the optimal opponent (DAgger's example: the conversation up to the reply,
the loss on that reply only), the experiment's rate and batch (`experiment=smollm2_cpu`), then
prints each epoch's seconds, mean loss and the share of positions whose whole reply is
argmax-right (teacher-forced). `context`: `train.sft.dagger_frozen_context`; `prompt`: with
`train.sft.dagger_frozen_prompt` too; `full`: the padded pass with every token's gradient.
"""

from __future__ import annotations

import argparse
import tempfile
import time


def positions(cfg, tok) -> list:
    """Every reply of the teacher's lines against the optimal opponent as its own example."""
    from ttt_lab.players.scripted import minimax_player
    from ttt_lab.train.sft_lean import encode
    from ttt_lab.train.teacher import optimal_lines

    s = cfg.train.sft
    teacher = minimax_player(tie_break=s.teacher_tie_break, think=False, scoring=s.teacher_scoring)
    data = []
    for r in optimal_lines(teacher, cfg.env):
        turns = [i for i, m in enumerate(r.messages) if m["role"] == "assistant"]
        data += [encode(tok, r.messages[: cut + 1], [False] * k + [True]) for k, cut in enumerate(turns)]
    return data


def reply_accuracy(model, data, *, bf16: bool) -> float:
    """The share of `data`'s examples whose every loss-carrying token is the argmax."""
    import torch

    from ttt_lab.train import sft_context

    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        read = sft_context.predictions(model, data)
    model.train()
    return sum(p == t for p, t in read) / len(read)


def train_mode(home: str, mode: str, *, epochs: int, bf16: bool) -> list[dict]:
    """One mode's epochs from the base weights: a row per epoch (and one before)."""
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.sft_lean import LeanSFT, Schedule

    cfg = load(["experiment=smollm2_cpu", f"home={home}"]).cfg
    s = cfg.train.sft
    model, tok = load_model(str(resolve_model_path(cfg)), cfg)
    data = positions(cfg, tok)
    loop = LeanSFT(model, tok, learning_rate=s.learning_rate, batch_size=s.batch_size,
                   micro_batch_size=s.micro_batch_size, bf16=bf16, seed=0)
    rows = [{"mode": mode, "epoch": 0, "positions": len(data), "accuracy": reply_accuracy(model, data, bf16=bf16)}]
    for epoch in range(epochs):
        schedule = Schedule(s.lr_scheduler, s.warmup_steps if epoch == 0 else 0,
                            frozen_context=mode != "full", frozen_prompt=mode == "prompt")
        t = time.perf_counter()
        losses = loop.fit(data, 1, schedule)
        seconds = time.perf_counter() - t
        rows.append({"mode": mode, "epoch": epoch + 1, "seconds": round(seconds, 1),
                     "loss": sum(losses) / len(losses), "accuracy": reply_accuracy(model, data, bf16=bf16)})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--modes", default="context,prompt", help="full, context, prompt (comma-separated)")
    ap.add_argument("--fp32", action="store_true", help="fp32 (the AVX2 path's precision), not bf16 autocast")
    args = ap.parse_args()

    from ttt_lab.train.runtime import kernel_path, quiet, torch_threads

    quiet()
    torch_threads()
    print(f"kernel path: {kernel_path()}; {'fp32' if args.fp32 else 'bf16 autocast'}")
    with tempfile.TemporaryDirectory() as home:
        rows = [r for m in args.modes.split(",") for r in train_mode(home, m, epochs=args.epochs, bf16=not args.fp32)]
    for r in rows:
        extra = f"{r['seconds']:7.1f} s  loss {r['loss']:.4f}" if r["epoch"] else f"({r['positions']} positions)"
        print(f"  {r['mode']:8s} epoch {r['epoch']}  reply accuracy {r['accuracy']:6.1%}  {extra}")


if __name__ == "__main__":
    main()
