"""The exact walk of a sampling model reads its reply probabilities off one batched, left-padded
forward pass: they are the probabilities the model gives each reply token by token, prompt by
prompt, at the sampling temperature. (That walking a distribution gives the rates sampled games
do is tests/env/test_exact.py's; the two end to end, against 4,000 sampled games, is
tests/train/test_exact_model.py's, in `make test-slow`.)"""

from pathlib import Path

import pytest
import torch

from ttt_lab.config.load import load
from ttt_lab.env.episode import Episode
from ttt_lab.env.tree import ToldOpponent
from ttt_lab.players.distributions import MOVE_REPLIES, ScoredDistribution
from ttt_lab.train.checkpoints import load_model

from ..env.helpers import example


def turns(env) -> list[Episode]:
    """Conversations of different lengths: an opening, a reply to the opponent, a retry after an
    invalid reply, a later turn."""
    told = ToldOpponent()
    out = []
    plays = ((True, []), (False, []), (True, [("<move>9</move>", -1)]),
             (True, [("<move>0</move>", 4), ("<move>2</move>", 1)]))
    for first, moves in plays:
        told.cell = 4
        ep = Episode(example(model_first=first), env, told)
        for reply, answer in moves:
            told.cell = answer
            ep.step(reply)
        out.append(ep)
    return out


def one_by_one(model, tok, messages: list[dict], reply: str, temperature: float) -> float:
    """P(reply, then the end of turn | prompt): one unpadded forward pass, token by token."""
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    head = tok(prompt, add_special_tokens=False)["input_ids"]
    tail = [*tok(reply, add_special_tokens=False)["input_ids"], tok.eos_token_id]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([head + tail])).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return float(sum(logp[len(head) - 1 + k, t] for k, t in enumerate(tail)).exp())


@pytest.mark.parametrize("temperature", [0.5, 1.0])
def test_scored_replies_are_the_models_own_probabilities(tiny_checkpoint: Path, tmp_path: Path,
                                                         temperature: float) -> None:
    torch.set_num_threads(1)
    cfg = load(["env.think=off", "player.max_new_tokens=6", f"home={tmp_path}", "tracking.enabled=false"]).cfg
    model, tok = load_model(str(tiny_checkpoint), cfg)
    model.eval()
    asked = turns(cfg.env)
    assert len({len(t.messages) for t in asked}) >= 3  # prompts of different lengths share the batch
    scored = ScoredDistribution(model, tok, temperature=temperature, max_new_tokens=6, batch_size=3)
    got = scored.distributions(asked)
    assert len(got) == len(asked)
    for turn, replies in zip(asked, got, strict=True):
        assert [r for r, _ in replies] == list(MOVE_REPLIES) and 0.0 < sum(q for _, q in replies) <= 1.0
        for reply, q in replies:
            assert q == pytest.approx(one_by_one(model, tok, turn.messages, reply, temperature), rel=1e-4)
