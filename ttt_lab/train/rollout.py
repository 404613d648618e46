"""Whole games played by a causal LM, batched across games with one shared KV cache.

Every game's token sequence lives in one batch cache. A turn feeds each active game its
new environment tokens (left-padded into one block), then decodes one token per step for
all games still writing their reply; a game that has finished its reply feeds padding,
masked out. The conversation is never re-encoded: each forward pass only sees new tokens.
Finished games leave the batch (`batch_select_indices`). Position ids count real tokens
only, so padding in the middle of a sequence changes nothing for the model.

The result per game is what TRL's `rollout_func` needs: `prompt_ids` (system prompt and
first user turn), `completion_ids` (everything after, the model's replies and the
environment's messages), `env_mask` (1 = a token the model wrote, 0 = environment).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ttt_lab.env import parser, prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode, opponent_seed
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import Opponent


@dataclass
class Rollout:
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    record: GameRecord | None = None


@dataclass
class Sampling:
    temperature: float = 1.0
    """0 means greedy."""
    max_new_tokens: int = 32


class ChatTokens:
    """Token ids for the pieces of a ChatML-style conversation, without re-encoding history."""

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.eos = tokenizer.eos_token_id
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos

    def encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def max_env_tokens(self) -> int:
        """An upper bound on the environment's tokens between two replies."""
        longest = max((parser.feedback(parser.Parsed(k, 0, False)) for k in parser.INVALID_KINDS), key=len)
        status = f"{longest} {prompts.opponent_status('X', 8)}"
        messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},
                    {"role": "user", "content": prompts.turn_message(".........", status)}]
        return len(self.after_reply(messages, ended_with_eos=False)) + 16

    def prompt(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.encode(text)

    def after_reply(self, messages: list[dict[str, str]], ended_with_eos: bool) -> list[int]:
        """The environment's tokens after the model's last reply (`messages[-2]`): end of turn,
        the next user message (`messages[-1]`) and the assistant header, read off the template."""
        before = self.tok.apply_chat_template(messages[:-2], tokenize=False, add_generation_prompt=True)
        full = self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        reply = messages[-2]["content"]
        if full.startswith(before + reply):
            tail = full[len(before) + len(reply) :]
        else:  # a template that rewrites earlier turns: fall back to everything after the reply's turn
            tail = self.tok.eos_token + "\n" + full[len(self.tok.apply_chat_template(
                messages[:-1], tokenize=False, add_generation_prompt=False)) :]
        ids = self.encode(tail)
        if ended_with_eos and ids[:1] == [self.eos]:
            ids = ids[1:]
        return ids


class _Batch:
    """A static KV cache over all games of the call, and its attention mask.

    A static cache is written in place, where a dynamic one would copy the whole cache on
    every decode step. Finished games stay in the batch and are fed masked padding.
    """

    def __init__(self, model, n: int, max_len: int, device: torch.device) -> None:
        from transformers import StaticCache

        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self.mask = torch.zeros((n, 0), dtype=torch.long, device=device)
        self.positions = torch.zeros(n, dtype=torch.long, device=device)
        self.device, self.max_len = device, max_len

    def feed(self, model, chunks: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
        """Append one left-padded block of tokens per game; returns the last position's logits."""
        width = max(len(c) for c in chunks)
        if self.mask.shape[1] + width > self.max_len:
            raise RuntimeError(f"rollout exceeded its cache of {self.max_len} tokens")
        ids = torch.full((len(chunks), width), pad, dtype=torch.long)
        block = torch.zeros((len(chunks), width), dtype=torch.long)
        for i, c in enumerate(chunks):
            if c:
                ids[i, width - len(c) :] = torch.tensor(c, dtype=torch.long)
                block[i, width - len(c) :] = 1
        ids, block = ids.to(self.device), block.to(self.device)
        pos = (self.positions[:, None] + torch.cumsum(block, dim=1) - 1).clamp(min=0)
        self.mask = torch.cat([self.mask, block], dim=1)
        out = model(input_ids=ids, attention_mask=self.mask, position_ids=pos, cache=self.cache, use_cache=True)
        self.positions = self.positions + block.sum(dim=1)
        return out.logits[:, -1, :]


def _sample(logits: torch.Tensor, sampling: Sampling, generator: torch.Generator | None) -> torch.Tensor:
    if sampling.temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def play_rollouts(
    model,
    tokenizer,
    examples: Sequence[Example],
    env: EnvConfig,
    opponent: Opponent,
    sampling: Sampling,
    *,
    generator: torch.Generator | None = None,
    opponent_seeding: str = "per_example",
    game_offset: int = 0,
) -> list[Rollout]:
    """Play one whole game per example with `model` as the player; see the module docstring."""
    chat = ChatTokens(tokenizer)
    device = next(model.parameters()).device
    seeds = [opponent_seed(ex, game_offset + i, opponent_seeding) for i, ex in enumerate(examples)]
    episodes = [Episode(ex, env, opponent, s) for ex, s in zip(examples, seeds, strict=True)]
    rollouts = [Rollout(chat.prompt(ep.messages)) for ep in episodes]
    n = len(episodes)
    chunks: list[list[int]] = [r.prompt_ids for r in rollouts]
    max_len = max(len(c) for c in chunks) + env.max_model_turns * (sampling.max_new_tokens + chat.max_env_tokens())
    batch = _Batch(model, n, max_len, device)
    active = set(range(n))
    was_training = model.training
    model.eval()
    try:
        while active:
            logits = batch.feed(model, chunks, chat.pad)
            replies = _decode_turn(model, batch, logits, active, chat, sampling, generator)
            chunks = [[] for _ in range(n)]
            for g in sorted(active):
                ids = replies[g]
                ep, ro = episodes[g], rollouts[g]
                ro.completion_ids += ids
                ro.env_mask += [1] * len(ids)
                ep.step(tokenizer.decode(ids, skip_special_tokens=True))
                if ep.done:
                    active.discard(g)
                    continue
                env_ids = chat.after_reply(ep.messages, bool(ids) and ids[-1] == chat.eos)
                ro.completion_ids += env_ids
                ro.env_mask += [0] * len(env_ids)
                chunks[g] = ids[-1:] + env_ids
    finally:
        model.train(was_training)
    for ep, ro in zip(episodes, rollouts, strict=True):
        ro.record = ep.record()
    return rollouts


def _decode_turn(model, batch: _Batch, logits: torch.Tensor, active: set[int], chat: ChatTokens,
                 sampling: Sampling, generator: torch.Generator | None) -> list[list[int]]:
    """One reply per active game; the last token of each is left unfed (it starts the next chunk)."""
    n = logits.shape[0]
    replies: list[list[int]] = [[] for _ in range(n)]
    writing = torch.zeros(n, dtype=torch.bool, device=logits.device)
    writing[sorted(active)] = True
    for step in range(sampling.max_new_tokens):
        tokens = _sample(logits, sampling, generator)
        for row in torch.nonzero(writing).flatten().tolist():
            replies[row].append(int(tokens[row]))
        writing &= tokens != chat.eos
        if step + 1 == sampling.max_new_tokens or not bool(writing.any()):
            break
        feed = [[int(tokens[r])] if writing[r] else [] for r in range(n)]
        logits = batch.feed(model, feed, chat.pad)
    return replies
