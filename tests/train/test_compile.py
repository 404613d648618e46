"""`train.compile`: the trainer's torch.compiled model is exact enough to train with (the log-probs
of eager mode within 1e-4 nats, the same greedy tokens, an update that changes the weights), and
`auto` does not compile, saying why in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ttt_lab.errors import InvalidSetting
from ttt_lab.train.runtime import use_compile

from .conftest import cfg_for

LOGP_TOLERANCE = 1e-4
"""Nats: compiling reorders fp32 reductions and fuses kernels; it does not change the arithmetic."""


def test_auto_does_not_compile_and_says_why(tmp_path: Path) -> None:
    from ttt_lab.train import trainer_args

    said: list[str] = []
    cfg = cfg_for(tmp_path, "steps=1")
    assert use_compile(cfg, said.append) is False and len(said) == 1 and "train.compile=true forces it" in said[0]
    assert trainer_args.grpo_args(cfg, cfg.train.phases[0], 1, tmp_path, 60).torch_compile is False
    forced = cfg_for(tmp_path, "steps=1", "train.compile=true")
    assert use_compile(forced, said.append) is True and len(said) == 1
    assert trainer_args.grpo_args(forced, forced.train.phases[0], 1, tmp_path, 60).torch_compile is True
    assert use_compile(cfg_for(tmp_path, "train.compile=false")) is False


def test_an_unknown_compile_choice_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidSetting, match=r"train\.compile.*auto \| true \| false"):
        cfg_for(tmp_path, "train.compile=sometimes")


@pytest.mark.slow
def test_the_compiled_model_scores_games_as_eager_mode_and_its_update_learns(sft_run, tmp_path: Path) -> None:
    from tests.train.test_training import weights
    from ttt_lab.train import grpo
    from ttt_lab.train.checkpoints import load_model

    cfg = cfg_for(tmp_path, "steps=1", "temperature=1.5", "train.compile=true")
    model, tok = load_model(str(sft_run[0]), cfg)
    ids = torch.randint(0, len(tok), (8, 120), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        eager = torch.log_softmax(model(input_ids=ids).logits, -1)
        compiled = torch.log_softmax(torch.compile(model, dynamic=True)(input_ids=ids).logits, -1)
    assert (eager - compiled).abs().max().item() < LOGP_TOLERANCE
    assert torch.equal(eager.argmax(-1), compiled.argmax(-1))
    info = grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(sft_run[0]), tmp_path / "rl")
    assert info["steps"] == 1 and not torch.equal(weights(sft_run[0]), weights(tmp_path / "rl"))
