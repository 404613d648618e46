"""The transformers generation backend: every game's tokens in one batch KV cache.

A turn feeds each playing game its new tokens (left-padded into one block), then decodes
one token per step for all games still writing their reply; a game that has finished its
reply feeds padding, masked out. The conversation is never re-encoded: each forward pass
only sees new tokens. A reply's last token is fed with the game's next chunk. Position ids
count real tokens only, so padding in the middle of a sequence changes nothing for the
model. Finished games leave the batch (`keep`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch

from ttt_lab.engine.generation import ChatTokens, Reply, Sampling


class KVCacheBackend:
    """`generation.Backend` on a transformers model: one `_Batch` of all games."""

    def __init__(self, model, chat: ChatTokens, n: int, max_len: int, sampling: Sampling,
                 generator: torch.Generator | None, game_keys: Sequence[int] | None = None) -> None:
        self.model, self.chat, self.sampling = model, chat, sampling
        self.draw = _Draws(generator, game_keys)
        self.batch = _Batch(model, n, max_len, next(model.parameters()).device)
        self.unfed: list[list[int]] = [[] for _ in range(n)]

    def turn(self, chunks: list[list[int]], live: list[bool]) -> list[Reply]:
        feed = [self.unfed[r] + chunks[r] if live[r] else [] for r in range(len(chunks))]
        logits = self.batch.feed(self.model, feed, self.chat.pad)
        replies = _decode_turn(self.model, self.batch, logits, live, self.chat, self.sampling, self.draw)
        self.unfed = [ids[-1:] for ids, _ in replies]
        return replies

    def keep(self, rows: list[int]) -> None:
        self.batch.keep(rows)
        self.unfed = [self.unfed[r] for r in rows]
        self.draw.keep(rows)


class _Draws:
    """Where sampling's randomness comes from: one stream for the batch (`generator`), or one
    per game (`game_keys`), so that a game's replies do not depend on which other games share
    its batch, its process or its micro-batch (the same games on 1 or N training processes)."""

    def __init__(self, generator: torch.Generator | None, game_keys: Sequence[int] | None) -> None:
        self.generator = generator
        self.rows = None if game_keys is None else [torch.Generator().manual_seed(int(k)) for k in game_keys]

    def keep(self, rows: list[int]) -> None:
        if self.rows is not None:
            self.rows = [self.rows[r] for r in rows]

    def sample(self, logp: torch.Tensor, writing: list[bool]) -> torch.Tensor:
        """One token per row from the log-probabilities `logp`."""
        if self.rows is None:
            return torch.multinomial(logp.exp(), 1, generator=self.generator).squeeze(-1)
        rows = [r for r, on in enumerate(writing) if on]
        if not rows:
            return logp.argmax(dim=-1)
        u = torch.stack([torch.rand(logp.shape[-1], generator=self.rows[r], dtype=torch.float64) for r in rows])
        gumbel = -torch.log(-torch.log(u.clamp_(1e-300, 1.0)))  # argmax(logp + Gumbel) draws from softmax(logp)
        noise = torch.zeros_like(logp)
        noise[torch.tensor(rows, device=logp.device)] = gumbel.to(logp.device, logp.dtype)
        return (logp + noise).argmax(dim=-1)


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
        """Append one left-padded block of tokens per row; returns the last position's logits.
        When few rows have tokens (the last games still writing a reply), only those rows are
        computed (`GrowingCache.only`); the others' logits are zeros."""
        width = max(len(c) for c in chunks)
        if self.mask.shape[1] + width > self.max_len:
            raise RuntimeError(f"rollout exceeded its cache of {self.max_len} tokens")
        n = len(chunks)
        fed = [i for i, c in enumerate(chunks) if c]
        few = hasattr(self.cache, "only") and self.mask.shape[1] > 0 and 0 < len(fed) <= n * FEW_ROWS
        take = fed if few else list(range(n))
        ids = torch.full((len(take), width), pad, dtype=torch.long)
        block = torch.zeros((n, width), dtype=torch.long)
        for j, i in enumerate(take):
            if chunks[i]:
                ids[j, width - len(chunks[i]) :] = torch.tensor(chunks[i], dtype=torch.long)
                block[i, width - len(chunks[i]) :] = 1
        ids, block = ids.to(self.device), block.to(self.device)
        pos = (self.positions[:, None] + torch.cumsum(block, dim=1) - 1).clamp(min=0)
        self.mask = torch.cat([self.mask, block], dim=1)
        self.positions = self.positions + block.sum(dim=1)
        if not few:
            return self._forward(model, ids, self.mask, pos)
        rows = torch.tensor(fed, dtype=torch.long, device=self.device)
        with self.cache.only(rows):
            part = self._forward(model, ids, self.mask[rows], pos[rows])
        logits = part.new_zeros((n, part.shape[-1]))
        logits[rows] = part
        return logits

    def _forward(self, model, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, cache=self.cache, use_cache=True,
                    logits_to_keep=1)
        return out.logits[:, -1, :]

    def keep(self, rows: list[int]) -> None:
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        for layer in self.cache.layers:  # every layer type (LFM2's convolutions too) can reorder its batch
            layer.reorder_cache(index)
        self.mask, self.positions = self.mask[index], self.positions[index]


FEW_ROWS = 0.5
"""Compute only the rows with tokens when at most this share of the batch has any: gathering
their keys and values costs less than computing every row from there on."""


def _cache(config, max_len: int):
    """An in-place `GrowingCache` for plain full-attention decoders (the tiny model, Llama,
    Qwen); transformers' own `DynamicCache` for anything else (sliding windows, LFM2's
    convolutions), which is slower but knows every layer type."""
    from transformers import DynamicCache

    from ttt_lab.engine.kv_cache import GrowingCache

    text = config.get_text_config()
    types = set(getattr(text, "layer_types", None) or ["full_attention"])
    window = getattr(text, "sliding_window", None)
    if types == {"full_attention"} and not window:
        return GrowingCache(text.num_hidden_layers, max_len)
    if window and window < max_len and ("sliding_attention" in types or getattr(text, "use_sliding_window", True)):
        warnings.warn(SlidingWindowWarning(
            f"This model attends over a sliding window of {window} tokens and a game may reach {max_len}: the "
            "batched rollout engine counts the window in cache slots, padding included, so late in long games "
            "a reply sees a little less history than the training pass scores it with. Generate with vLLM "
            "(train.use_vllm=true) to avoid it, or keep games under the window (env.max_model_turns, "
            "player.max_new_tokens)."), stacklevel=3)
    return DynamicCache(config=config)


class SlidingWindowWarning(UserWarning):
    pass


def _sample(logits: torch.Tensor, sampling: Sampling, draw: _Draws,
            writing: list[bool]) -> tuple[torch.Tensor, torch.Tensor]:
    """The next token of each row and its log-probability."""
    logp = torch.log_softmax(logits.float() / (sampling.temperature if sampling.temperature > 0 else 1.0), dim=-1)
    tokens = logits.argmax(dim=-1) if sampling.temperature <= 0 else draw.sample(logp, writing)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


def _decode_turn(model, batch: _Batch, logits: torch.Tensor, live: list[bool], chat: ChatTokens,
                 sampling: Sampling, draw: _Draws) -> list[Reply]:
    """One reply (tokens, log-probabilities) per live row; the last token of each is left
    unfed (it starts the next chunk)."""
    n = logits.shape[0]
    replies: list[Reply] = [([], []) for _ in range(n)]
    writing = torch.tensor(live, dtype=torch.bool, device=logits.device)
    for step in range(sampling.max_new_tokens):
        tokens, logp = _sample(logits, sampling, draw, writing.tolist())
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
