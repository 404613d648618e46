"""SFT warm-up: a teacher plays games through the environment, lost games are dropped, and
TRL's SFTTrainer trains on the model turns only (assistant-only loss)."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

from ttt_lab import log
from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.env.dataset import Example, make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.env.tree import play_tree, tree_symbol
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.game.seeding import derive_seed
from ttt_lab.players.scripted import minimax_player
from ttt_lab.train import distributed
from ttt_lab.train.checkpoints import load_model, publish
from ttt_lab.train.phase_data import micro_batch
from ttt_lab.train.runtime import Runtime, resolve
from ttt_lab.train.teacher import coverage, optimal_lines, target_positions

LOG = log.get("train")
SFT_SALT = 0x5F7
TREE_SALT = 0x7EE0
LINES_SALT = 0x1135


def teacher_dataset(cfg: Config) -> DatasetConfig:
    """The teacher's games: `sft.num_games` over the dataset's opponent range, always stratified
    (the RL phases' `dataset.sampling` does not reach the warm-up)."""
    s = cfg.train.sft
    return DatasetConfig(size=s.num_games, p_min=cfg.dataset.p_min, p_max=cfg.dataset.p_max,
                         num_strata=cfg.dataset.num_strata, examples_per_batch=min(s.num_games, 256),
                         first_player="alternate", model_symbol=cfg.dataset.model_symbol)


def teacher(cfg: Config):
    """The warm-up's scripted teacher (`train.sft.teacher_*`)."""
    s = cfg.train.sft
    return minimax_player(tie_break=s.teacher_tie_break, p_random=s.teacher_p_random, think=cfg.env.think != "off",
                          scoring=s.teacher_scoring)


def strength_examples(cfg: Config) -> list[Example]:
    """`sft.num_games` examples spread evenly over `sft.teacher_strengths` (each strength's games
    alternate who moves first), or over the dataset's range when no strengths are named."""
    s = cfg.train.sft
    seed = derive_seed(warm_up_seed(cfg), SFT_SALT)
    if not s.teacher_strengths:
        return make_dataset(teacher_dataset(cfg), seed)
    out: list[Example] = []
    k = len(s.teacher_strengths)
    for i, p in enumerate(s.teacher_strengths):
        n = s.num_games // k + (i < s.num_games % k)
        if n:
            ds = DatasetConfig(size=n, p_min=p, p_max=p, num_strata=1, examples_per_batch=n,
                               first_player="alternate", model_symbol=cfg.dataset.model_symbol)
            out += [dataclasses.replace(e, index=len(out) + j) for j, e in enumerate(make_dataset(ds, seed + i))]
    return out


def lines_of(cfg: Config) -> list[GameRecord]:
    """The teacher's games against every tie-break branch of the optimal opponent, each once
    (the data's, the coverage's and the diagnostic's: one seed for a noisy teacher's moves)."""
    return optimal_lines(teacher(cfg), cfg.env, model_symbol=tree_symbol(cfg.dataset.model_symbol, 0),
                         seed=derive_seed(warm_up_seed(cfg), LINES_SALT))


def teacher_lines(cfg: Config) -> list[GameRecord]:
    """One copy of `lines_of`, each game where the model moves first `sft.first_weight` times."""
    s = cfg.train.sft
    return [r for r in lines_of(cfg) for _ in range(s.first_weight if r.example.model_first else 1)]


def teacher_games(cfg: Config) -> list[GameRecord]:
    """`sft.num_games` games of a minimax teacher against the environment's opponent range (or
    `sft.teacher_strengths`), then `sft.teacher_trees` of its trees (every opponent reply, both
    sides), then `sft.optimal_lines` copies of its lines against the optimal opponent."""
    s = cfg.train.sft
    player = teacher(cfg)
    records: list[GameRecord] = []
    if s.num_games:
        records = play_games(player, strength_examples(cfg), cfg.env, MinimaxOpponent(tie_break="random"))
    for k in range(s.teacher_trees):
        records += play_tree(player, cfg.env, model_symbol=tree_symbol(cfg.dataset.model_symbol, k),
                             seed=derive_seed(warm_up_seed(cfg), TREE_SALT + k))
    if s.optimal_lines:
        records += teacher_lines(cfg) * s.optimal_lines
    return records


def keep(records: list[GameRecord], cfg: Config) -> list[GameRecord]:
    s = cfg.train.sft
    out = [r for r in records if not s.filter_losses or r.outcome in (WIN, DRAW)]
    if s.filter_format_errors:
        out = [r for r in out if r.messages_in_format == r.model_turns and r.invalid_moves == 0]
    return out


def run_sft(cfg: Config, model_path: str, out: Path, *, runtime: Runtime | None = None) -> dict:
    """Train from `model_path` into `out` (a complete checkpoint plus `sft_games.jsonl`) under
    `runtime` (resolved from `cfg` when not given)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    s = cfg.train.sft
    records = teacher_games(cfg)
    kept = keep(records, cfg)
    runtime = runtime or resolve(cfg)
    model, tokenizer = load_model(model_path, cfg, runtime=runtime)
    work = out.with_name(out.name + ".work")
    if distributed.is_main():
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        with (work / "sft_games.jsonl").open("w") as f:
            for r in kept:
                f.write(r.to_json() + "\n")
    distributed.barrier()
    cover = data_coverage(cfg, kept)
    LOG.info("SFT data: " + ", ".join(f"{k} {v}" for k, v in cover.items()))
    if s.loop == "lean":
        return _run_lean(cfg, records, kept, model, tokenizer, runtime, work, out, cover)
    data = Dataset.from_list([{"messages": r.messages} for r in kept])
    share = s.batch_size // cfg.train.processes
    micro = micro_batch(share, cfg.train.micro_batch_size)  # same update, less memory per pass
    args = SFTConfig(
        output_dir=str(work / "trainer"), num_train_epochs=s.epochs, learning_rate=s.learning_rate,
        per_device_train_batch_size=micro, gradient_accumulation_steps=share // micro,
        assistant_only_loss=s.assistant_only_loss,
        max_length=None,
        use_cpu=cfg.model.device == "cpu", bf16=runtime.bf16, torch_compile=runtime.compile, report_to="none",
        logging_steps=s.logging_steps, save_strategy="no", seed=warm_up_seed(cfg),
        data_seed=warm_up_seed(cfg),
        lr_scheduler_type=s.lr_scheduler, warmup_steps=s.warmup_steps, disable_tqdm=True, dataset_num_proc=None,
        gradient_checkpointing=cfg.train.gradient_checkpointing, ddp_find_unused_parameters=False,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    from transformers import PrinterCallback

    from ttt_lab.train.progress import StepProgress, sft_callback

    trainer.remove_callback(PrinterCallback)
    steps = math.ceil(len(kept) / s.batch_size) * s.epochs
    with StepProgress("SFT warm-up", steps, s.batch_size) as bar:
        if distributed.is_main():
            trainer.add_callback(sft_callback(bar))
        result = trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    info = {"games": len(records), "kept": len(kept), "steps": result.global_step, "first_loss": losses[:1],
            "final_loss": losses[-1:], "losses": losses, "coverage": cover}

    def write() -> dict:
        (work / "sft_summary.json").write_text(json.dumps(info))
        return publish(trainer.model, tokenizer, work, out, info)

    distributed.on_main(write)
    return info


def data_coverage(cfg: Config, kept: list[GameRecord]) -> dict:
    """The kept games' decisions and positions, and how many of the positions the optimal
    opponent can lead the teacher to they hold (`teacher.coverage`)."""
    return coverage(kept, target_positions(lines_of(cfg), cfg.env.think), cfg.env.think)


def _run_lean(cfg: Config, records: list[GameRecord], kept: list[GameRecord], model, tokenizer, runtime: Runtime,
              work: Path, out: Path, cover: dict) -> dict:
    from ttt_lab.train.progress import StepProgress
    from ttt_lab.train.warm_up import run_lean

    s = cfg.train.sft
    if cfg.train.processes > 1:
        raise ValueError("train.sft.loop=lean runs in one process")
    steps = math.ceil(len(kept) / s.batch_size) * s.epochs
    with StepProgress("SFT warm-up", steps, s.batch_size) as bar:
        def on_step(step: int, loss: float) -> None:
            bar.update(step, {"loss": loss} if step % s.logging_steps == 0 else {})

        lean = run_lean(cfg, kept, model, tokenizer, runtime, teacher(cfg), on_step=on_step)
    losses = lean.pop("losses")
    info = {"games": len(records), "kept": len(kept), "steps": lean["steps"], "first_loss": losses[:1],
            "final_loss": losses[-1:], "losses": losses[:: s.logging_steps], "coverage": cover, **lean}
    (work / "sft_summary.json").write_text(json.dumps(info))
    return publish(model, tokenizer, work, out, info)
