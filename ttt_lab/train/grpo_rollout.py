"""What TRL's GRPOTrainer calls back into during a phase: `rollout_func` (whole games by
`rollout.play_rollouts`, numbered within the phase) and the rubric's three reward functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ttt_lab.config.build import build_opponent
from ttt_lab.config.schema import Config, PhaseConfig
from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.dataset import Example
from ttt_lab.train import distributed
from ttt_lab.train.phase_data import PHASE_SALT
from ttt_lab.train.runtime import Runtime, resolve

if TYPE_CHECKING:
    from ttt_lab.game.opponents import Opponent
    from ttt_lab.train.exploiter import Refresher


def reward_functions(game_metrics: Callable[[list], None]) -> list[Callable]:
    def outcome(completions, game, **_) -> list[float]:
        game_metrics(distributed.gather(list(game)))  # every process's games, once, on every rank
        return [g.rewards.outcome for g in game]

    def format(completions, game, **_) -> list[float]:
        return [g.rewards.format for g in game]

    def invalid(completions, game, **_) -> list[float]:
        return [g.rewards.invalid for g in game]

    return [outcome, format, invalid]


def game_numbers(example_ids: list[int], num_generations: int) -> list[int]:
    """Each game's number in its phase: example i's copies (TRL hands them over consecutively,
    a group never split) are games i*G .. i*G+G-1, whichever process or update plays them."""
    seen: dict[int, int] = {}
    out = []
    for i in example_ids:
        out.append(i * num_generations + seen.get(i, 0) % num_generations)
        seen[i] = seen.get(i, 0) + 1
    return out


def phase_players(cfg: Config, phase: PhaseConfig) -> tuple[Opponent, Refresher | None]:
    """The phase's opponent and, for an exploiter, what keeps its best response recent. The phase
    owns both: its rollouts play the opponent, its end settles on the refresher's best policy."""
    from ttt_lab.train.exploiter import phase_opponent

    opponent = build_opponent(cfg.opponent)
    return opponent, phase_opponent(opponent, cfg, phase)


def make_rollout_func(cfg: Config, phase: PhaseConfig, examples: list[Example], max_new_tokens: int,
                      index: int = 0, *, runtime: Runtime | None = None,
                      players: tuple[Opponent, Refresher | None] | None = None):
    """TRL's `rollout_func` for the phase, playing `players` (`phase_players` when not given)."""
    from ttt_lab.game.seeding import derive_seed

    bf16 = (runtime or resolve(cfg)).bf16
    opponent, refresh = players or phase_players(cfg, phase)
    seed = derive_seed(cfg.seed, PHASE_SALT + index)

    def rollout_func(prompts: list, trainer) -> dict:
        model = trainer.accelerator.unwrap_model(trainer.model)
        if refresh is not None:
            done = refresh(model, trainer.processing_class, trainer.state.global_step)
            if done is not None and hasattr(trainer, "note"):  # logged as train/exploiter/*
                trainer.note({"exploiter/exploitability": done.exploitability, "exploiter/positions": done.positions})
        numbers = game_numbers([int(str(p).split()[1]) for p in prompts], phase.num_generations)
        batch = [examples[n // phase.num_generations] for n in numbers]
        vllm = trainer.vllm_generation if cfg.train.use_vllm else None
        rollouts = play_rollouts(model, trainer.processing_class, batch, cfg.env, opponent,
                                 Sampling(phase.temperature, max_new_tokens, bf16),
                                 opponent_seeding=cfg.opponent.seeding, game_ids=numbers, vllm=vllm,
                                 sampling_seed=seed)
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts] if vllm is not None else None,
            "env_mask": [r.env_mask for r in rollouts],
            "game": [r.record for r in rollouts],
        }

    return rollout_func


def max_completion_tokens(cfg: Config, max_new_tokens: int, tokenizer) -> int:
    from ttt_lab.engine.generation import ChatTokens

    return cfg.env.max_model_turns * (max_new_tokens + ChatTokens(tokenizer).max_env_tokens())

