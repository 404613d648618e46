"""`train.precision`: bf16 autocast over fp32 master weights is exact enough to train with (the
greedy moves of fp32, log-probs within a stated tolerance, updates that still learn), and
`auto` falls back to fp32, in one line, where the hardware has no native bf16."""

from __future__ import annotations

from pathlib import Path

import torch

from ttt_lab.engine.precision import autocast, native_bf16, use_bf16
from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.game.opponents import MinimaxOpponent

from .conftest import cfg_for

LOGP_TOLERANCE = 0.15
"""Nats: bf16 keeps 8 bits of mantissa; a tiny model's log-probs move by a few hundredths."""


def _rollouts(model, tok, cfg, bf16: bool):
    examples = make_dataset(DatasetConfig(size=32, model_symbol="alternate", first_player="alternate", p_min=0.0,
                                          p_max=1.0), 11)
    return play_rollouts(model, tok, examples, cfg.env, MinimaxOpponent(), Sampling(0.0, 6, bf16))


def _next_token_logp(model, rollouts) -> list[torch.Tensor]:
    """Per game, the model's next-token log-probabilities at each of its own tokens (teacher forced)."""
    out = []
    with torch.no_grad():
        for r in rollouts:
            ids = torch.tensor([r.prompt_ids + r.completion_ids])
            logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
            start = len(r.prompt_ids) - 1
            out.append(torch.stack([logp[start + i] for i, m in enumerate(r.env_mask) if m]))
    return out


def test_bf16_plays_the_greedy_moves_of_fp32_with_close_log_probs(sft_run, tmp_path: Path) -> None:
    """On the positions of fp32's greedy games: bf16's next-token log-probabilities are within
    the tolerance, so bf16 picks fp32's move wherever fp32's best token leads its second by more
    than twice the tolerance (a near-tie may go either way; the briefly trained fixture model
    has many among its moves)."""
    from ttt_lab.engine.rollout import generation_model
    from ttt_lab.train.checkpoints import load_model

    cfg = cfg_for(tmp_path)
    model, tok = load_model(str(sft_run[0]), cfg)
    games = _rollouts(model, tok, cfg, False)
    fast, cast = generation_model(model, True)
    with autocast(cast, "cpu"):
        pairs = list(zip(_next_token_logp(model, games), _next_token_logp(fast, games), strict=True))
    fp32, bf16 = torch.cat([a for a, _ in pairs]), torch.cat([b for _, b in pairs])
    best = fp32.topk(2, dim=-1).values
    decisive = best[:, 0] - best[:, 1] > 2 * LOGP_TOLERANCE
    assert decisive.float().mean() > 0.4, "too few decisive positions for the test to say anything"
    assert torch.equal(fp32.argmax(-1)[decisive], bf16.argmax(-1)[decisive])
    chosen = fp32.argmax(-1, keepdim=True)
    worst = (fp32.gather(-1, chosen) - bf16.gather(-1, chosen)).abs().max().item()
    assert worst < LOGP_TOLERANCE, worst
    assert next(model.parameters()).dtype == torch.float32, "master weights stay fp32"


def test_a_bf16_grpo_step_changes_the_weights_and_a_bf16_sft_learns(sft_run, tiny_checkpoint, tmp_path: Path) -> None:
    from tests.train.test_training import weights
    from ttt_lab.train import grpo, trainer_args
    from ttt_lab.train.sft import run_sft

    cfg = cfg_for(tmp_path, "steps=1", "temperature=1.5", "train.precision=bf16")
    assert trainer_args.grpo_args(cfg, cfg.train.phases[0], 1, tmp_path, 60).bf16
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
