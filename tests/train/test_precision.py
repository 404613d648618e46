"""`train.precision`: bf16 autocast over fp32 master weights is exact enough to train with (the
greedy moves of fp32, log-probs within a stated tolerance, updates that still learn), and
`auto` falls back to fp32, in one line, where the hardware has no native bf16."""

from __future__ import annotations

from pathlib import Path

import torch

from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.train.rollout import Sampling, play_rollouts
from ttt_lab.train.runtime import native_bf16, use_bf16

from .conftest import cfg_for

LOGP_TOLERANCE = 0.15
"""Nats: bf16 keeps 8 bits of mantissa; a tiny model's log-probs move by a few hundredths."""


def _rollouts(model, tok, cfg, bf16: bool):
    examples = make_dataset(DatasetConfig(size=32, model_symbol="alternate", first_player="alternate", p_min=0.0,
                                          p_max=1.0), 11)
    return play_rollouts(model, tok, examples, cfg.env, MinimaxOpponent(), Sampling(0.0, 6, bf16))


def test_bf16_plays_the_greedy_moves_of_fp32_with_close_log_probs(sft_run, tmp_path: Path) -> None:
    from ttt_lab.train.checkpoints import load_model

    cfg = cfg_for(tmp_path)
    model, tok = load_model(str(sft_run[0]), cfg)
    fp32, bf16 = _rollouts(model, tok, cfg, False), _rollouts(model, tok, cfg, True)
    moves = [[c for by, c in r.record.moves if by == "model"] for r in fp32]
    assert moves == [[c for by, c in r.record.moves if by == "model"] for r in bf16]
    worst = max(abs(a - b) for r32, r16 in zip(fp32, bf16, strict=True)
                for a, b, m in zip(r32.logprobs, r16.logprobs, r32.env_mask, strict=True) if m)
    assert worst < LOGP_TOLERANCE, worst
    assert next(model.parameters()).dtype == torch.float32, "master weights stay fp32"


def test_a_bf16_grpo_step_changes_the_weights_and_a_bf16_sft_learns(sft_run, tiny_checkpoint, tmp_path: Path) -> None:
    from tests.train.test_training import weights
    from ttt_lab.train import grpo
    from ttt_lab.train.sft import run_sft

    cfg = cfg_for(tmp_path, "steps=1", "temperature=1.5", "train.precision=bf16")
    assert grpo.grpo_args(cfg, cfg.train.phases[0], 1, tmp_path, 60).bf16
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(sft_run[0]), tmp_path / "rl")
    assert info["steps"] == 1 and not torch.equal(weights(sft_run[0]), weights(tmp_path / "rl"))
    sft = run_sft(cfg_for(tmp_path, "train.precision=bf16", "train.sft.num_games=48", "train.sft.epochs=8",
                          "train.sft.learning_rate=1e-2"), str(tiny_checkpoint), tmp_path / "sft")
    assert sft["losses"][-1] < 0.85 * sft["losses"][0]


def test_auto_is_bf16_only_on_native_hardware_and_says_so_when_it_falls_back(tmp_path: Path) -> None:
    said: list[str] = []
    chosen = use_bf16(cfg_for(tmp_path, "train.precision=auto"), said.append)
    assert chosen == native_bf16("cpu")
    assert (len(said) == 1 and "training in fp32" in said[0]) if not chosen else said == []
    assert use_bf16(cfg_for(tmp_path, "train.precision=fp32"), said.append) is False
    assert use_bf16(cfg_for(tmp_path, "train.precision=bf16"), said.append) is True
