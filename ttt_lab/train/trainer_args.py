"""TRL's GRPOConfig for one phase, and the LoRA adapters it trains: every value from the
schema (`phase.*`, `train.*`, `model.lora.*`)."""

from __future__ import annotations

from pathlib import Path

from ttt_lab.config.schema import Config, PhaseConfig
from ttt_lab.train.phase_data import SHUFFLE_DATASET, micro_batch
from ttt_lab.train.runtime import Runtime, resolve


def grpo_args(cfg: Config, phase: PhaseConfig, steps: int, work: Path, max_completion: int, *,
              runtime: Runtime | None = None):
    """TRL's GRPOConfig for one phase: every value from the schema (`phase.*`, `train.*`), the
    precision and compile choices from `runtime` (resolved from `cfg` when not given)."""
    from trl import GRPOConfig

    runtime = runtime or resolve(cfg)
    share = phase.batch_size // cfg.train.processes  # each process's games: whole groups (validated)
    micro = micro_batch(share, cfg.train.micro_batch_size)
    return GRPOConfig(
        output_dir=str(work / "trainer"), max_steps=steps, learning_rate=phase.learning_rate,
        per_device_train_batch_size=micro, gradient_accumulation_steps=share // micro,
        num_generations=phase.num_generations, num_iterations=1, temperature=phase.temperature,
        loss_type=phase.loss_type, epsilon_high=phase.epsilon_high, beta=phase.beta,
        max_completion_length=max_completion,
        reward_weights=[cfg.env.reward.outcome_weight, cfg.env.reward.format_weight, cfg.env.reward.invalid_weight],
        shuffle_dataset=SHUFFLE_DATASET, seed=cfg.seed, data_seed=cfg.seed, use_cpu=cfg.model.device == "cpu",
        bf16=runtime.bf16, torch_compile=runtime.compile, gradient_checkpointing=cfg.train.gradient_checkpointing,
        report_to="none", logging_steps=1, save_strategy="steps", save_steps=save_steps(cfg, steps),
        save_total_limit=1, disable_tqdm=True, lr_scheduler_type=phase.lr_scheduler,
        warmup_steps=phase.warmup_steps, log_completions=False, ddp_find_unused_parameters=False,
        **_vllm_args(cfg, cfg.player.max_new_tokens),
    )


def save_steps(cfg: Config, steps: int) -> int:
    """Steps between two trainer checkpoints of a phase (see `train.save_every`)."""
    return max(1, min(cfg.train.save_every, steps // cfg.train.saves_per_phase))


def _vllm_args(cfg: Config, max_new_tokens: int) -> dict:
    """TRL's vLLM settings; replies are capped per turn (TRL's default cap is the whole game)."""
    if not cfg.train.use_vllm:
        return {"use_vllm": False}
    args = {"use_vllm": True, "vllm_mode": cfg.train.vllm_mode, "generation_kwargs": {"max_tokens": max_new_tokens},
            "vllm_gpu_memory_utilization": cfg.train.vllm_gpu_memory_utilization}
    if cfg.train.vllm_server_base_url:
        args["vllm_server_base_url"] = cfg.train.vllm_server_base_url
    return args


def lora(cfg: Config):
    if cfg.model.lora.r <= 0:
        return None
    from peft import LoraConfig

    return LoraConfig(r=cfg.model.lora.r, lora_alpha=cfg.model.lora.alpha, lora_dropout=cfg.model.lora.dropout,
                      target_modules="all-linear", task_type="CAUSAL_LM")
