"""The finding's rows: a SmolLM2 checkpoint (the base model when none is given) against the random
and the optimal opponent, through the training's batched engine, on the games the training's own
evaluations play (`train.evaluate.evaluate_model`, sampled mode): the base row is then comparable
game for game with the +SFT and +RL rows the training printed.

    python docs/findings/real-model/rows.py [--checkpoint PATH] [--games 100] [--think] [OVERRIDES...]

--think: free-text thinking (env.think=required, 128 new tokens, temperature 1), as the
published base rows were played; otherwise bare moves, greedy, as experiment=smollm2_cpu plays.
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="")
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--think", action="store_true")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()

    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.evaluate import evaluate_model
    from ttt_lab.train.runtime import quiet, resolve, torch_threads

    quiet()
    torch_threads()
    think = ["env.think=required", "player.max_new_tokens=128"] if args.think else []
    with tempfile.TemporaryDirectory() as home:
        cfg = load(["experiment=smollm2_cpu", f"home={home}", "tracking.enabled=false", *think,
                    *([f"model.path={args.checkpoint}"] if args.checkpoint else []), *args.overrides]).cfg
        runtime = resolve(cfg)
        model, tokenizer = load_model(resolve_model_path(cfg), cfg, runtime=runtime)
        start = time.perf_counter()
        rows = evaluate_model(model, tokenizer, cfg, args.games, temperature=1.0 if args.think else 0.0,
                              runtime=runtime)
        seconds = time.perf_counter() - start
    print(f"{args.checkpoint or 'base'} ({'thinking, sampled' if args.think else 'bare moves, greedy'}; "
          f"{args.games} games per opponent; {seconds:.0f} s)")
    for r in rows:
        (w, _, _), (d, _, _), (lo, _, _) = (r.outcome_rates()[k] for k in ("win", "draw", "loss"))
        print(f"  {r.opponent:8s} W/D/L {100 * w:.0f}/{100 * d:.0f}/{100 * lo:.0f}  "
              f"invalid {100 * r.invalid_rate:.1f} %  format {100 * r.format_rate:.1f} %")


if __name__ == "__main__":
    main()
