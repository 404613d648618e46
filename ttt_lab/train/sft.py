"""SFT warm-up: a teacher plays games through the environment, lost games are dropped, and
TRL's SFTTrainer trains on the model turns only (assistant-only loss)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from ttt_lab import log
from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.env.record import GameRecord
from ttt_lab.train import distributed
from ttt_lab.train.checkpoints import load_model, publish
from ttt_lab.train.phase_data import micro_batch
from ttt_lab.train.runtime import Runtime, resolve
from ttt_lab.train.teacher import coverage, target_positions
from ttt_lab.train.teacher_data import (  # noqa: F401  (the warm-up's data, named here too)
    SFT_SALT,
    keep,
    lines_of,
    strength_examples,
    teacher,
    teacher_dataset,
    teacher_games,
    teacher_lines,
)

LOG = log.get("train")
def run_sft(cfg: Config, model_path: str, out: Path, *, runtime: Runtime | None = None) -> dict:
    """Train from `model_path` into `out` (a complete checkpoint plus `sft_games.jsonl`) under
    `runtime` (resolved from `cfg` when not given)."""
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
    if s.loop == "lean":  # TRL and datasets are not imported (seconds of a short run)
        return _run_lean(cfg, records, kept, model, tokenizer, runtime, work, out, cover)
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

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
