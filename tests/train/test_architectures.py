"""The rollout engine on the architectures of real checkpoints (Qwen3; LFM2's convolutions;
Gemma 3's sliding windows), built small from their configs with random weights, offline: every
token the engine wrote has the log-probability a plain forward pass over the whole game gives it,
with finished games dropped from the batch at every turn."""

import pytest
import torch

from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.tiny import build_tokenizer

pytestmark = pytest.mark.numerics

ARCHITECTURES = {
    "qwen3": {"head_dim": 16},
    "lfm2": {"layer_types": ["conv", "full_attention"], "block_ff_dim": 64, "block_auto_adjust_ff_dim": False},
    "gemma3_text": {"head_dim": 16, "sliding_window": 512, "layer_types": ["sliding_attention", "full_attention"]},
}


def small(model_type: str, **overrides):
    from transformers import AutoConfig, AutoModelForCausalLM

    tok = build_tokenizer()
    torch.manual_seed(0)
    cfg = AutoConfig.for_model(model_type, vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                               eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                               **(ARCHITECTURES[model_type] | overrides))
    return AutoModelForCausalLM.from_config(cfg).eval(), tok


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_rollouts_on_real_architectures_match_a_plain_forward_pass(model_type, monkeypatch) -> None:
    import warnings

    from ttt_lab.engine import rollout

    model, tok = small(model_type)
    monkeypatch.setattr(rollout, "COMPACT_AT", 1.0)
    examples = make_dataset(DatasetConfig(size=6, model_symbol="alternate", p_min=0.0, p_max=1.0), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        rollouts = play_rollouts(model, tok, examples, EnvConfig(max_model_turns=3), MinimaxOpponent(),
                                 Sampling(temperature=1.0, max_new_tokens=4),
                                 generator=torch.Generator().manual_seed(3))
    assert max(len(r.completion_ids) for r in rollouts) > 20, "several turns were played"
    for r in rollouts:
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([r.prompt_ids + r.completion_ids])).logits[0], -1)
        start = len(r.prompt_ids)
        wrote = [i for i, m in enumerate(r.env_mask) if m]
        expected = torch.stack([logp[start + i - 1, r.completion_ids[i]] for i in wrote])
        torch.testing.assert_close(torch.tensor([r.logprobs[i] for i in wrote]), expected, atol=2e-4, rtol=2e-4)


def test_a_sliding_window_shorter_than_a_game_is_named_before_it_skews_anything() -> None:
    from ttt_lab.engine.kv_backend import SlidingWindowWarning

    model, tok = small("gemma3_text", sliding_window=8)
    examples = make_dataset(DatasetConfig(size=2), 2)
    with pytest.warns(SlidingWindowWarning, match="sliding window of 8 tokens"):
        play_rollouts(model, tok, examples, EnvConfig(max_model_turns=2), MinimaxOpponent(), Sampling(0.0, 4))
