"""The examples of an RL phase, the order TRL's sampler hands them to the trainer, and the
files that record them for the dataset audit (`dataset.jsonl`, `dataset.json`).

Kept free of heavy imports so the dataset audit can rebuild exactly what training sees.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ttt_lab.config.schema import Config, PhaseConfig
from ttt_lab.env.dataset import Example, dataset_jsonl, make_dataset
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.game.seeding import derive_seed

PHASE_SALT = 0xA11
SHUFFLE_DATASET = False
"""GRPOTrainer must not shuffle: the dataset is already stratified update by update."""


def phase_dataset_config(cfg: Config, phase: PhaseConfig, steps: int) -> DatasetConfig:
    """`cfg.dataset` with the phase's range and strata, one batch per update (prompts = batch / generations)."""
    prompts = phase.batch_size // phase.num_generations
    d = cfg.dataset
    ds = replace(d, size=steps * prompts, examples_per_batch=prompts,
                 p_min=d.p_min if phase.p_min is None else phase.p_min,
                 p_max=d.p_max if phase.p_max is None else phase.p_max,
                 num_strata=d.num_strata if phase.num_strata is None else phase.num_strata)
    if ds.num_strata > prompts:
        # More strata than prompts cannot all appear in one update (iid sampling ignores strata,
        # but the dataset audit bins it the same way, so both compare like with like).
        ds = replace(ds, num_strata=prompts)
    return ds


def phase_dataset(cfg: Config, phase: PhaseConfig, index: int, steps: int) -> list[Example]:
    """Enough examples for `steps` updates, stratified per update."""
    return make_dataset(phase_dataset_config(cfg, phase, steps), derive_seed(cfg.seed, PHASE_SALT + index))


def phase_steps(cfg: Config, phase: PhaseConfig) -> int:
    if cfg.train.budget_games is not None:
        return max(1, cfg.train.budget_games // phase.batch_size)
    return phase.steps


def micro_batch(batch: int, wanted: int) -> int:
    """Games per forward/backward pass: the largest divisor of `batch` not above `wanted`."""
    return max(d for d in range(1, min(batch, max(1, wanted)) + 1) if batch % d == 0)


def trainer_batches(num_examples: int, prompts: int, num_generations: int, accumulation: int,
                    seed: int) -> list[list[int]]:
    """The example indices of each update, as TRL's `RepeatSampler` yields them under the
    settings `grpo.run_rl_phase` gives GRPOTrainer: one generation of `prompts` x
    `num_generations` games per optimizer step, split into `accumulation` passes (TRL repeats
    the generation batch's indices once per pass), one iteration."""
    from trl.trainer.utils import RepeatSampler

    order = list(RepeatSampler(range(num_examples), mini_repeat_count=num_generations, batch_size=prompts,
                               repeat_count=accumulation, shuffle=SHUFFLE_DATASET, seed=seed))
    per_update = prompts * num_generations * accumulation
    return [list(dict.fromkeys(order[i : i + per_update])) for i in range(0, len(order), per_update)]


def save_dataset(folder: Path, examples: list[Example], ds, phase: PhaseConfig, accumulation: int) -> None:
    """The phase's examples in training order, plus what the dataset audit needs to read them."""
    import dataclasses
    import json

    (folder / "dataset.jsonl").write_text(dataset_jsonl(examples))
    meta = dataclasses.asdict(ds) | {"num_generations": phase.num_generations, "accumulation": accumulation}
    (folder / "dataset.json").write_text(json.dumps(meta, indent=2) + "\n")
