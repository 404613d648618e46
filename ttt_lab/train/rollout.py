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
    logprobs: list[float] = field(default_factory=list)
    """Per completion token: its log-probability under the sampling distribution (the model's
    logits over the temperature; temperature 1 when greedy), 0.0 for the environment's tokens."""
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


COMPACT_AT = 0.75
"""Drop finished games from the batch once at most this share of its rows still plays:
compacting copies the cache, so it pays only when enough rows go at once."""


class _Batch:
    """The KV cache of the games still playing, their attention mask and next positions.

    `keep(rows)` drops the rows of finished games, so a turn only computes games in play.
    """

    def __init__(self, model, n: int, max_len: int, device: torch.device) -> None:
        self.cache = _cache(model.config, max_len)
        self.mask = torch.zeros((n, 0), dtype=torch.long, device=device)
        self.positions = torch.zeros(n, dtype=torch.long, device=device)
        self.device, self.max_len = device, max_len

    def feed(self, model, chunks: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
        """Append one left-padded block of tokens per row; returns the last position's logits."""
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
        out = model(input_ids=ids, attention_mask=self.mask, position_ids=pos, cache=self.cache, use_cache=True,
                    logits_to_keep=1)
        self.positions = self.positions + block.sum(dim=1)
        return out.logits[:, -1, :]

    def keep(self, rows: list[int]) -> None:
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask, self.positions = self.mask[index], self.positions[index]


def _cache(config, max_len: int):
    """An in-place `GrowingCache` for plain full-attention decoders (the tiny model, Llama,
    Qwen); transformers' own `DynamicCache` for anything else (sliding windows, LFM2's
    convolutions), which is slower but knows every layer type."""
    from transformers import DynamicCache

    from ttt_lab.train.kv_cache import GrowingCache

    text = config.get_text_config()
    types = set(getattr(text, "layer_types", None) or ["full_attention"])
    if types == {"full_attention"} and not getattr(text, "sliding_window", None):
        return GrowingCache(text.num_hidden_layers, max_len)
    return DynamicCache(config=config)


def _sample(logits: torch.Tensor, sampling: Sampling,
            generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The next token of each row and its log-probability."""
    logp = torch.log_softmax(logits.float() / (sampling.temperature if sampling.temperature > 0 else 1.0), dim=-1)
    if sampling.temperature <= 0:
        tokens = logits.argmax(dim=-1)
    else:
        tokens = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


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
    rows: list[int | None] = list(range(n))
    was_training = model.training
    model.eval()
    try:
        while any(g is not None for g in rows):
            logits = batch.feed(model, [chunks[g] if g is not None else [] for g in rows], chat.pad)
            replies = _decode_turn(model, batch, logits, [g is not None for g in rows], chat, sampling, generator)
            for r, g in enumerate(rows):
                if g is not None and not _continue(episodes[g], rollouts[g], replies[r], chunks, g, chat, tokenizer):
                    rows[r] = None
            live = [r for r, g in enumerate(rows) if g is not None]
            if live and len(live) <= len(rows) * COMPACT_AT:
                batch.keep(live)
                rows = [rows[r] for r in live]
    finally:
        model.train(was_training)
    for ep, ro in zip(episodes, rollouts, strict=True):
        ro.record = ep.record()
    return rollouts


def _continue(ep: Episode, ro: Rollout, reply: tuple[list[int], list[float]], chunks: list[list[int]], g: int,
              chat: ChatTokens, tokenizer) -> bool:
    """Record game `g`'s reply and play it; False when the game is over, else its next chunk
    (the reply's unfed last token and the environment's answer) goes to `chunks[g]`."""
    ids, logprobs = reply
    ro.completion_ids += ids
    ro.env_mask += [1] * len(ids)
    ro.logprobs += logprobs
    ep.step(tokenizer.decode(ids, skip_special_tokens=True))
    if ep.done:
        return False
    env_ids = chat.after_reply(ep.messages, bool(ids) and ids[-1] == chat.eos)
    ro.completion_ids += env_ids
    ro.env_mask += [0] * len(env_ids)
    ro.logprobs += [0.0] * len(env_ids)
    chunks[g] = ids[-1:] + env_ids
    return True


def _decode_turn(model, batch: _Batch, logits: torch.Tensor, live: list[bool], chat: ChatTokens,
                 sampling: Sampling, generator: torch.Generator | None) -> list[tuple[list[int], list[float]]]:
    """One reply (tokens, log-probabilities) per live row; the last token of each is left
    unfed (it starts the next chunk)."""
    n = logits.shape[0]
    replies: list[tuple[list[int], list[float]]] = [([], []) for _ in range(n)]
    writing = torch.tensor(live, dtype=torch.bool, device=logits.device)
    for step in range(sampling.max_new_tokens):
        tokens, logp = _sample(logits, sampling, generator)
        ids, lps, rows = tokens.tolist(), logp.tolist(), writing.tolist()
        for row in (r for r in range(n) if rows[r]):
            replies[row][0].append(ids[row])
            replies[row][1].append(lps[row])
        writing &= tokens != chat.eos
        if step + 1 == sampling.max_new_tokens or not bool(writing.any()):
            break
        rows = writing.tolist()
        logits = batch.feed(model, [[ids[r]] if rows[r] else [] for r in range(n)], chat.pad)
    return replies
