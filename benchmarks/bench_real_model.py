"""SmolLM2-135M-Instruct (model=smollm2-135m) on this CPU, in one run: the first load (GGUF
conversion) and a later one; generation tokens/s, greedy and sampled, through transformers'
`generate` (what `player=hf` uses) and through the training's batched KV-cache engine; one
forward and backward pass (full fine-tuning and LoRA); an RL step's games/s and the share spent
generating, each in fp32 and under bf16 autocast, and SDPA against eager attention.

    python benchmarks/bench_real_model.py [--rl-steps 3] [--rl-batch 16] [--skip-rl]
    python benchmarks/bench_real_model.py --levers-only [--lever-repeat 3] [--lever-precisions fp32,bf16]

The warm-up's levers (issue 51) first: one update of the lean SFT loop for today's pass and each
lever, cumulative, the levers taking turns `--lever-repeat` times (medians); then, where the CPU
has bf16, the DAgger walk's greedy replies in fp32, under autocast and through a bf16 copy; then
the RL loss's LM head: TRL's fused kernel against the head at the model's tokens.

Ratios are against fp32 with SDPA measured in the same run (the machine is shared: compare
ratios, not absolute rates, across runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


SETTINGS = (("fp32", "sdpa"), ("bf16", "sdpa"), ("bf16", "eager"))
"""The baseline first: ratios are against it."""


def timed(fn, repeat: int = 1) -> float:
    """The median of `repeat` timings of `fn()` (after one untimed call when repeating)."""
    if repeat > 1:
        fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def load_times(home: Path) -> tuple[Path, float, float]:
    from transformers import AutoModelForCausalLM

    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path

    cfg = load(["model=smollm2-135m", f"home={home}"]).cfg
    t = time.perf_counter()
    path = Path(resolve_model_path(cfg))
    first = time.perf_counter() - t
    later = timed(lambda: AutoModelForCausalLM.from_pretrained(resolve_model_path(cfg)))
    return path, first, later


def turn_prompts(n: int) -> list[list[dict[str, str]]]:
    from ttt_lab.env import prompts

    board = prompts.turn_message(".........", prompts.opening_status("X", None))
    return [[{"role": "system", "content": prompts.system_prompt("X", "off")}, {"role": "user", "content": board}]
            for _ in range(n)]


def generate_rate(path: Path, *, bf16: bool, attention: str, batch: int, sample: bool, tokens: int = 32) -> float:
    """Tokens/s of `generate` writing `tokens` new tokens for `batch` opening turns."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation=attention).eval()
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in turn_prompts(batch)]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    def run() -> None:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            model.generate(**enc, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=sample,
                           temperature=1.0 if sample else None, top_p=None, top_k=None,
                           pad_token_id=tok.pad_token_id)

    return batch * tokens / timed(run, repeat=2)


def engine_rate(path: Path, overrides: list[str], *, games: int) -> float:
    """Games/s of the training's KV-cache engine playing `games` sampled games (no update)."""
    import torch

    from ttt_lab.config.load import load
    from ttt_lab.engine.rollout import Sampling, play_rollouts
    from ttt_lab.env.dataset import make_dataset
    from ttt_lab.env.settings import DatasetConfig
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.runtime import resolve

    cfg = load(overrides).cfg
    runtime = resolve(cfg)
    model, tok = load_model(str(path), cfg, runtime=runtime)
    examples = make_dataset(DatasetConfig(size=games, p_min=0.0, p_max=1.0), 0)
    sampling = Sampling(1.0, cfg.player.max_new_tokens, runtime.bf16)
    return games / timed(lambda: play_rollouts(model, tok, examples, cfg.env, MinimaxOpponent(tie_break="random"),
                                               sampling, generator=torch.Generator().manual_seed(0)), repeat=2)


def update_rate(path: Path, *, bf16: bool, lora: int, attention: str, batch: int = 8, length: int = 480) -> float:
    """Tokens/s of one forward and backward pass and an AdamW step over `batch` sequences."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation=attention)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=lora, lora_alpha=2 * lora, target_modules="all-linear"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    x = torch.randint(0, 49152, (batch, length), generator=torch.Generator().manual_seed(0))

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()

    return batch * length / timed(step, repeat=2)


LEVERS = (("today: full head, micro 4", "full", False, 4, 0, False), ("head at the loss", "loss", False, 4, 0, False),
          ("+ shared prefix", "loss", True, 4, 0, False), ("+ one pass of 8", "loss", True, 8, 0, False),
          ("+ prefix tries of 1024", "loss", True, 8, 1024, False),
          ("+ token-order update", "loss", True, 8, 1024, True),
          ("one pass of 8, eager passes", "loss", True, 8, 0, False))
"""The warm-up's levers, cumulative; the first row is today's pass (TRL's loss: every position
through the LM head, each game its own system prompt, micro-batches of 4). The token-order row
packs an update of neighbours in token order (`train.sft.order=prefix`) instead of games spread
over the lines: its tokens/s counts the games' own tokens, as every row does. The last is the
fourth row with the passes' attention through transformers' eager kernel (`train.sft.attention`),
the model's own SDPA everywhere else."""


def warm_up_levers(path: Path, *, bf16: bool, games: int = 8, repeat: int = 1) -> list[dict]:
    """Tokens/s of one optimizer update of the lean SFT loop over `games` teacher games against
    the optimal opponent (real lengths, about 400 tokens), for each of `LEVERS`: per wall second
    and per CPU second of this process (on a shared machine the CPU seconds are the steadier
    ratio: the wall clock also counts the time others' work held the cores). The loss of the
    first update shows it is the same loss (to bf16 rounding under autocast)."""
    import torch

    from ttt_lab.config.load import load
    from ttt_lab.players.scripted import minimax_player
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.sft_lean import LeanSFT, encode
    from ttt_lab.train.teacher import optimal_lines

    cfg = load(["experiment=smollm2_cpu", "model.attention=sdpa"]).cfg
    model, tok = load_model(str(path), cfg)
    lines = optimal_lines(minimax_player(tie_break="first", think=False, scoring="exploit"), cfg.env)
    data = [encode(tok, r.messages) for r in lines[:: len(lines) // games][:games]]
    ranked = sorted((encode(tok, r.messages) for r in lines), key=lambda e: e.ids)
    neighbours = ranked[len(ranked) // 2: len(ranked) // 2 + games]
    # learning rate 0: the weights never move, so the levers take turns on one model and optimizer
    loop = LeanSFT(model, tok, learning_rate=0.0, batch_size=games, micro_batch_size=games, bf16=bf16, seed=0)

    def lever(name: str, head: str, share: bool, micro: int, pack: int) -> LeanSFT:
        loop.head, loop.share_prefix, loop.micro, loop.pack_tokens = head, share, micro, pack
        loop.attention = "eager" if "eager" in name else None
        return loop

    rows = [{"lever": name,  # the first update untimed
             "loss": lever(name, head, share, micro, pack).update(neighbours if near else data, packed=pack > 0),
             "real": sum(len(e.ids) for e in (neighbours if near else data)), "wall": [], "cpu": []}
            for name, head, share, micro, pack, near in LEVERS]
    for _ in range(repeat):  # the levers in turn, so a load that drifts weighs on each alike
        for (name, head, share, micro, pack, near), row in zip(LEVERS, rows, strict=True):
            lever(name, head, share, micro, pack)
            w, c = time.perf_counter(), time.process_time()
            loop.update(neighbours if near else data, packed=pack > 0)
            row["wall"].append(time.perf_counter() - w)
            row["cpu"].append(time.process_time() - c)
    for row in rows:
        row["tok/s"] = row["real"] / statistics.median(row.pop("wall"))
        row["tok/cpu-s"] = row["real"] / statistics.median(row.pop("cpu"))
        print(row, flush=True)
    del torch
    return rows


def dagger_levers(path: Path, *, bf16: bool, positions: int = 16, lines: int = 0, repeat: int = 1) -> list[dict]:
    """Tokens/s of one update over `positions` single-reply positions (DAgger's form: the
    conversation up to a reply of the teacher's lines, the loss on that reply only, every depth
    past the first reply) and `lines` of the teacher's whole lines (a round's passes hold both),
    padded (today's DAgger pass), with frozen contexts (`train.sft.dagger_frozen_context`),
    frozen prompts too (`train.sft.dagger_frozen_prompt`), contexts kept from before the update
    (`train.sft.dagger_context_once`), and the frozen update's contexts alone (`contexts_only`);
    wall seconds, as `warm_up_levers`."""
    from ttt_lab.config.load import load
    from ttt_lab.players.scripted import minimax_player
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.sft_lean import LeanSFT, encode
    from ttt_lab.train.teacher import optimal_lines

    cfg = load(["experiment=smollm2_cpu", "model.attention=sdpa"]).cfg
    model, tok = load_model(str(path), cfg)
    games = optimal_lines(minimax_player(tie_break="first", think=False, scoring="exploit"), cfg.env)
    data = []
    for r in games[:: max(1, len(games) // positions)]:
        replies = [i for i, m in enumerate(r.messages) if m["role"] == "assistant"]
        k = 1 + len(data) % max(1, len(replies) - 1)  # the depths in turn
        data.append(encode(tok, r.messages[: replies[min(k, len(replies) - 1)] + 1],
                           [False] * min(k, len(replies) - 1) + [True]))
    data = data[:positions] + [encode(tok, r.messages) for r in games[1:: max(1, len(games) // max(1, lines))][:lines]]
    loop = LeanSFT(model, tok, learning_rate=0.0, batch_size=len(data), micro_batch_size=4, bf16=bf16, seed=0)
    levers = (("positions, padded micro 4", False, False, None), ("+ frozen contexts", True, False, None),
              ("+ frozen prompts", True, True, None), ("frozen contexts, eager passes", True, False, "eager"),
              (CONTEXTS_KEPT, True, False, "eager"), (CONTEXTS_ONLY, True, False, None))
    loop.attention = "eager"  # the kept row's kernel, as the eager row's (the file's recipe)
    kept = loop.keep_contexts(data)  # computed once, as a round does before its passes

    def run(row: dict) -> float:
        loop.attention = row["attention"]  # train.sft.attention: the passes' kernel
        loop.contexts = kept if row["lever"] == CONTEXTS_KEPT else None
        if row["lever"] == CONTEXTS_ONLY:
            return contexts_only(loop, data)
        return loop.update(data, frozen_context=row["frozen"], frozen_prompt=row["prompt"])

    rows = [{"lever": name, "frozen": frozen, "prompt": prompt, "attention": kernel, "wall": []}
            for name, frozen, prompt, kernel in levers]
    for row in rows:
        row["loss"] = run(row)
    for _ in range(repeat):
        for row in rows:
            w = time.perf_counter()
            run(row)
            row["wall"].append(time.perf_counter() - w)
    for row in rows:
        row["tok/s"] = sum(len(e.ids) for e in data) / statistics.median(row.pop("wall"))
        print(row, flush=True)
    return rows


CONTEXTS_KEPT = "eager, contexts kept a round"
"""The frozen-context update reading contexts computed before it (`train.sft.dagger_context_once`):
a round computes them once for all its passes, so the row leaves that out."""

CONTEXTS_ONLY = "the contexts alone (no grad)"
"""Not a lever: the frozen-context update's forward over its contexts alone, so the two rows'
ratio is the share of a round's update that contexts computed once a round would save."""


def contexts_only(loop, data: list) -> float:
    """The contexts of `data` as a frozen-context update computes them (its micro-batches, no
    gradient); nan for the loss."""
    import torch

    from ttt_lab.train import sft_context

    frozen, _ = loop.micro_batches(data, True)
    device = next(loop.model.parameters()).device
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=loop.bf16):
        for chunk in frozen:
            sft_context._contexts(loop.model, chunk)
    return float("nan")


def walk_levers(path: Path, *, positions: int = 48, repeat: int = 1) -> list[dict]:
    """Seconds for the greedy replies to `positions` fresh conversations (the teacher's positions,
    each read whole, as a tree walk's first level; after an untimed call), through `GreedyReplies` as the DAgger walk
    reads them: fp32 weights (the walk before), fp32 under bf16 autocast (a checkpoint's
    evaluation), a bf16 copy of the weights (the walk now); and how many replies equal the fp32 ones."""
    import copy

    import torch

    from ttt_lab.config.load import load
    from ttt_lab.engine.greedy import GreedyReplies
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.teacher import decisions
    from ttt_lab.train.teacher_data import teacher_games

    cfg = load(["experiment=smollm2_cpu", "model.attention=sdpa"]).cfg
    model, tok = load_model(str(path), cfg)
    convs = [r.messages[: d.message] for r in teacher_games(cfg) for d in decisions(r, cfg.env.think)]
    convs = convs[:: max(1, len(convs) // positions)][:positions]
    half = copy.deepcopy(model).to(torch.bfloat16)
    rows = []
    for name, m, cast in (("fp32 weights", model, False), ("fp32 under bf16 autocast", model, True),
                          ("bf16 copy", half, False)):
        replies: list[str] = []

        def ask(m=m, cast=cast, replies=replies) -> None:
            replies[:] = GreedyReplies(m, tok, cfg.player.max_new_tokens, cfg.eval.batch_size, cast)(convs)

        rows.append({"lever": name, "seconds": timed(ask, max(2, repeat)), "replies": list(replies)})
    base = rows[0]["replies"]
    for row in rows:
        row["same as fp32"] = sum(a == b for a, b in zip(row.pop("replies"), base, strict=True))
    return rows


def rl_head_levers(path: Path, *, bf16: bool, games: int = 4, repeat: int = 1) -> list[dict]:
    """Seconds of the RL loss's forward and backward over `games` whole games against the optimal
    opponent (the prompt its first turn, the rest the completion, the model's replies scored): TRL's
    fused log-prob head, which on a CPU scores every position, against `scored_logps`, the LM head
    at the model's tokens only (what `GameTrainer`'s loss runs); and the largest difference of the
    scored log-probs."""
    import copy

    import torch
    from trl.trainer.utils import add_fused_lm_head

    from ttt_lab.config.load import load
    from ttt_lab.players.scripted import minimax_player
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.sft_lean import IGNORE, batch_tensors, encode
    from ttt_lab.train.teacher import optimal_lines
    from ttt_lab.train.trainer import scored_logps

    cfg = load(["experiment=smollm2_cpu", "model.attention=sdpa"]).cfg
    model, tok = load_model(str(path), cfg)
    fused = copy.deepcopy(model)
    add_fused_lm_head(fused, outputs=("log_probs", "entropy"))
    lines = optimal_lines(minimax_player(tie_break="first", think=False, scoring="exploit"), cfg.env)
    data = [encode(tok, r.messages) for r in lines[:: len(lines) // games][:games]]
    ids, labels = batch_tensors(data, tok.pad_token_id or 0)
    mask = (torch.arange(ids.shape[1])[None] < torch.tensor([len(e.ids) for e in data])[:, None]).long()
    keep = ids.shape[1] - int((labels != IGNORE).long().argmax(1).min())  # from the first reply on
    scored = (labels[:, -keep:] != IGNORE).long()
    trl_labels = ids.masked_fill(mask == 0, -100)
    trl_labels[:, :-keep] = -100
    out: dict[str, torch.Tensor] = {}

    def trl() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            o = fused(input_ids=ids, attention_mask=mask, labels=trl_labels, fused_lm_head=True)
        out["trl"] = (o.log_probs[:, -keep:] * scored).detach()
        ((o.log_probs[:, -keep:] * scored).sum() + (o.entropy[:, -keep:] * scored).sum()).backward()

    def ours() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logps, ent = scored_logps(model, ids, mask, keep, scored, 1.0, True)
        out["ours"] = logps.detach()
        (logps.sum() + ent.sum()).backward()

    rows = [{"lever": "TRL's fused head (every position)", "seconds": timed(trl, max(2, repeat))},
            {"lever": "head at the model's tokens", "seconds": timed(ours, max(2, repeat))}]
    rows[1]["max |dlogp|"] = float((out["trl"] - out["ours"]).abs().max())
    rows[0]["tokens"] = int(mask.sum())
    rows[1]["tokens"] = int(scored.sum())
    return rows


def rl_rate(path: Path, overrides: list[str], home: Path, batch: int, steps: int) -> tuple[float, float, float]:
    from bench_train import measure

    return measure(overrides, path, home, batch, steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rl-steps", type=int, default=3)
    ap.add_argument("--rl-batch", type=int, default=16)
    ap.add_argument("--skip-rl", action="store_true")
    ap.add_argument("--levers-only", action="store_true", help="only the warm-up's levers (fp32 and bf16)")
    ap.add_argument("--lever-games", type=int, default=8)
    ap.add_argument("--lever-repeat", type=int, default=1, help="timed updates per lever (the median)")
    ap.add_argument("--lever-precisions", default="fp32,bf16",
                    help="the levers' precisions (bf16 only where the CPU has it natively)")
    args = ap.parse_args()

    import torch

    from ttt_lab.engine.precision import native_bf16
    from ttt_lab.train.runtime import kernel_path, quiet, torch_threads

    quiet()
    torch_threads()
    print(f"threads {torch.get_num_threads()}; native bf16: {native_bf16('cpu')}; "
          f"torch CPU capability: {torch.backends.cpu.get_cpu_capability()}")
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        path, first, later = load_times(home)
        print(f"load: first (GGUF conversion) {first:.1f} s, later {later:.2f} s")
        print(f"kernel path: {kernel_path()}")
        wanted = args.lever_precisions.split(",")
        for bf16 in [p == "bf16" for p in wanted if p == "fp32" or native_bf16("cpu")]:
            rows = warm_up_levers(path, bf16=bf16, games=args.lever_games, repeat=args.lever_repeat)
            print(f"\nwarm-up levers ({'bf16 autocast' if bf16 else 'fp32'}, {args.lever_games} games an update)")
            for row in rows:
                print(f"  {row['lever']:28s} {row['tok/s']:8.1f} tok/s {row['tok/s'] / rows[0]['tok/s']:5.2f}x  "
                      f"{row['tok/cpu-s']:8.1f} tok/CPU-s {row['tok/cpu-s'] / rows[0]['tok/cpu-s']:5.2f}x  "
                      f"loss {row['loss']:.6f}")
        for bf16 in [p == "bf16" for p in wanted if p == "fp32" or native_bf16("cpu")]:
            for positions, lines in ((16, 0), (13, 3)):  # positions alone; with 3 lines of 16, as a round's mix
                rows = dagger_levers(path, bf16=bf16, positions=positions, lines=lines, repeat=args.lever_repeat)
                print(f"\nDAgger pass levers ({'bf16 autocast' if bf16 else 'fp32'}, {positions} positions and "
                      f"{lines} lines an update)")
                for row in rows:
                    print(f"  {row['lever']:28s} {row['tok/s']:8.1f} tok/s {row['tok/s'] / rows[0]['tok/s']:5.2f}x  "
                          f"loss {row['loss']:.6f}")
        if native_bf16("cpu"):
            walk = walk_levers(path, repeat=args.lever_repeat)
            print("\nDAgger tree walk: greedy replies to 48 fresh conversations")
            for row in walk:
                print(f"  {row['lever']:28s} {row['seconds']:7.1f} s {walk[0]['seconds'] / row['seconds']:5.2f}x  "
                      f"{row['same as fp32']} of 48 replies as fp32's")
        for bf16 in [p == "bf16" for p in wanted if p == "fp32" or native_bf16("cpu")]:
            head = rl_head_levers(path, bf16=bf16, repeat=args.lever_repeat)
            print(f"\nRL loss, forward and backward over 4 games ({'bf16 autocast' if bf16 else 'fp32'}): "
                  f"{head[0]['tokens']} tokens, {head[1]['tokens']} of them the model's")
            for row in head:
                print(f"  {row['lever']:36s} {row['seconds']:6.2f} s {head[0]['seconds'] / row['seconds']:5.2f}x"
                      + (f"  max |dlogp| {row['max |dlogp|']:.2e}" if "max |dlogp|" in row else ""))
        if args.levers_only:
            return
        rows = []
        for precision, attention in SETTINGS:
            bf16 = precision == "bf16"
            base = ["experiment=smollm2_cpu", f"home={home}", "tracking.enabled=false",
                    f"train.precision={precision}", f"model.attention={attention}"]
            row = {"setting": f"{precision} {attention}",
                   "greedy tok/s @1": generate_rate(path, bf16=bf16, attention=attention, batch=1, sample=False),
                   "sampled tok/s @32": generate_rate(path, bf16=bf16, attention=attention, batch=32, sample=True),
                   "engine games/s @32": engine_rate(path, base, games=32),
                   "update tok/s full": update_rate(path, bf16=bf16, lora=0, attention=attention),
                   "update tok/s LoRA16": update_rate(path, bf16=bf16, lora=16, attention=attention)}
            if not args.skip_rl and attention == "sdpa":
                rate, share, _ = rl_rate(path, base, home / f"rl-{precision}", args.rl_batch, args.rl_steps)
                row |= {f"RL games/s @{args.rl_batch}": rate, "RL generating": share}
            rows.append(row)
            print(row, flush=True)
    print_table(rows)


def print_table(rows: list[dict]) -> None:
    keys = [k for k in rows[0] if k != "setting"]
    print(f"\n{'':12s}" + "".join(f"{k:>20s}" for k in keys))
    for row in rows:
        ratio = " ".join(f"{row[k] / rows[0][k]:.2f}x" for k in keys if k in row and k != "RL generating")
        print(f"{row['setting']:12s}" + "".join(f"{row[k]:20.2f}" if k in row else f"{'-':>20s}" for k in keys))
        print(f"{'  vs fp32 sdpa':12s} {ratio}")


if __name__ == "__main__":
    main()
