"""Greedy replies to many conversations at once, each reading only what its last reply left unread.

A tree walk (`ttt_lab.env.exact.expand_tree`) asks a greedy policy for its reply to every
conversation of a level at once, and every conversation of the next level is one of them plus
the reply and the environment's answer. `GreedyReplies` keeps the last call's KV caches: a
conversation that extends one it answered last time (the same tokens, then the reply as it was
written, then the environment's tokens) copies that row's keys and values and feeds only its new
tokens; any other conversation is read whole. The replies are those of re-reading every
conversation from its first token (the same tokens at the same positions: the same argmax, up
to rounding), at about a third of the tokens over a whole tree (docs/benchmarks.md,
"tiny_cpu on the AVX2-fp32 path").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ttt_lab.engine.generation import ChatTokens, Sampling
from ttt_lab.engine.kv_backend import _Batch, _decode_turn, _Draws
from ttt_lab.engine.kv_cache import GrowingCache
from ttt_lab.engine.precision import autocast

Key = tuple[tuple[str, str], ...]


@dataclass
class _Chunk:
    """One batch of the last call: its cache, and per conversation its row and every token it has
    seen or written (the last reply token unfed)."""

    batch: _Batch
    rows: dict[Key, tuple[int, list[int]]]


def _key(messages: Sequence[dict[str, str]]) -> Key:
    return tuple((m["role"], m["content"]) for m in messages)


class GreedyReplies:
    """A model's greedy replies (up to `max_new_tokens`, the end of turn dropped), `batch_size`
    conversations a forward pass, reusing the KV cache of the conversations the previous call
    answered (see the module docstring)."""

    def __init__(self, model, tokenizer, max_new_tokens: int, batch_size: int = 256, bf16: bool = False,
                 keep_bytes: int | None = None) -> None:
        self.model, self.chat = model, ChatTokens(tokenizer)
        self.sampling = Sampling(0.0, max_new_tokens, bf16)
        self.batch_size = max(1, batch_size)
        self.keep_bytes = default_keep_bytes() if keep_bytes is None else keep_bytes
        self.batch_bytes = default_batch_bytes()
        self._last: list[_Chunk] = []
        self._version = -1

    def _weights_version(self) -> int:
        """Changes whenever a weight is written in place (an optimizer step): the kept caches are then stale."""
        return sum(p._version for p in self.model.parameters())

    def __call__(self, conversations: Sequence[Sequence[dict[str, str]]]) -> list[str]:
        version = self._weights_version()
        if version != self._version:
            self._last, self._version = [], version
        prompts = [self.chat.prompt(list(c)) for c in conversations]
        keys = [_key(c) for c in conversations]
        groups: dict[int, list[tuple[int, int, list[int]]]] = {}
        fresh: list[int] = []
        for i, (c, ids) in enumerate(zip(conversations, prompts, strict=True)):
            found = self._parent(_key(c[:-2]), ids) if len(c) > 2 else None
            if found is None:
                fresh.append(i)
            else:
                chunk, row, new = found
                groups.setdefault(chunk, []).append((i, row, new))
        out: list[str] = [""] * len(prompts)
        done = _Kept(self.keep_bytes)
        model, cast = self.model, self.sampling.bf16  # bf16 under autocast, as the player's `generate` ran
        was_training = self.model.training
        model.eval()
        # the last call's chunks are let go one by one, each once its conversations' children are
        # answered: this call's kept caches grow as the last call's shrink
        parents: list[_Chunk | None] = list(self._last)
        self._last = []
        try:
            with torch.no_grad(), autocast(cast, str(next(self.model.parameters()).device)):
                for chunk, items in groups.items():
                    parent = parents[chunk]
                    assert parent is not None
                    rows = self._rows(parent.batch.mask.shape[1] + max(len(new) for _, _, new in items)
                                      + self.sampling.max_new_tokens + 1)
                    for start in range(0, len(items), rows):
                        grown = items[start : start + rows]
                        feed = [new for _, _, new in grown]
                        batch = _grown(model, parent.batch, [row for _, row, _ in grown],
                                       max(map(len, feed)) + self.sampling.max_new_tokens + 1)
                        done.add(self._answer(model, batch, [i for i, _, _ in grown], feed, prompts, keys, out))
                    parents[chunk] = parent = None
                parents.clear()
                rows = self._rows(max((len(prompts[i]) for i in fresh), default=0) + self.sampling.max_new_tokens + 1)
                for start in range(0, len(fresh), rows):
                    part = fresh[start : start + rows]
                    feed = [prompts[i] for i in part]
                    batch = _Batch(model, len(part), max(map(len, feed)) + self.sampling.max_new_tokens + 1,
                                   self._device())
                    done.add(self._answer(model, batch, part, feed, prompts, keys, out))
        finally:
            self.model.train(was_training)
        self._last = done.chunks
        return out

    def _rows(self, width: int) -> int:
        """Conversations a forward pass: `batch_size`, fewer where their cache of `width` tokens
        (keys and values of every layer, 4 bytes a number at most) would pass `batch_bytes`."""
        c = self.model.config
        heads = getattr(c, "num_attention_heads", None)
        layers, hidden = getattr(c, "num_hidden_layers", None), getattr(c, "hidden_size", None)
        if not (heads and layers and hidden):
            return self.batch_size
        kv = getattr(c, "num_key_value_heads", None) or heads
        per_token = 2 * layers * kv * (getattr(c, "head_dim", None) or hidden // heads) * 4
        return max(1, min(self.batch_size, self.batch_bytes // (per_token * max(1, width))))

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _parent(self, key: Key, ids: list[int]) -> tuple[int, int, list[int]] | None:
        """(chunk, row, tokens to feed) when `ids` extends a conversation the last call answered."""
        for c, chunk in enumerate(self._last):
            got = chunk.rows.get(key)
            if got is not None:
                row, seen = got
                if len(ids) > len(seen) and ids[: len(seen)] == seen:
                    return c, row, ids[len(seen) - 1 :]  # the reply's last token was never fed
                return None
        return None

    def _answer(self, model, batch: _Batch, part: list[int], feed: list[list[int]], prompts: list[list[int]],
                keys: list[Key], out: list[str]) -> _Chunk:
        logits = batch.feed(model, feed, self.chat.pad)
        live = [True] * len(part)
        replies = _decode_turn(model, batch, logits, live, self.chat, self.sampling, _Draws(None, None))
        rows: dict[Key, tuple[int, list[int]]] = {}
        for r, (i, (ids, _)) in enumerate(zip(part, replies, strict=True)):
            out[i] = self.chat.tok.decode(ids, skip_special_tokens=True)
            rows[keys[i]] = (r, prompts[i] + ids)
        # only the in-place cache is grown row by row (`_grown`); any other reads its conversations whole
        return _Chunk(batch, rows if isinstance(batch.cache, GrowingCache) else {})


def default_keep_bytes() -> int:
    """A quarter of the machine's memory for a level's kept caches; the level before lets its
    chunks go as this one's grow (a 135M-parameter model's every-reply tree keeps about 18 GB
    otherwise; a tighter budget recomputes the chunks that do not fit, and costs more time)."""
    import os

    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4


def release_memory() -> None:
    """Hand the memory the process freed back to the system before a walk: the allocator keeps
    training's freed blocks otherwise, and a walk's caches are sized against the machine's memory."""
    import contextlib
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def default_batch_bytes() -> int:
    """An eighth of the machine's memory for the cache of the batch in flight (its attention's
    scores and activations come beside it)."""
    import os

    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8


def _cache_bytes(batch: _Batch) -> int:
    if not isinstance(batch.cache, GrowingCache):
        return 0
    return sum(2 * layer._keys.numel() * layer._keys.element_size()
               for layer in batch.cache.growing_layers() if layer.is_initialized)


class _Kept:
    """The chunks of this call kept for the next, while their caches fit in `budget` bytes; a chunk
    past it is dropped at once (the next call reads its conversations whole: the same replies,
    more tokens)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        self.chunks: list[_Chunk] = []

    def add(self, chunk: _Chunk) -> None:
        size = _cache_bytes(chunk.batch)
        if self.used + size <= self.budget:
            self.chunks.append(chunk)
            self.used += size


def _grown(model, parent: _Batch, rows: list[int], extra: int) -> _Batch:
    """A batch whose row j starts as `parent`'s row `rows[j]`, with room for `extra` more tokens."""
    index = torch.tensor(rows, dtype=torch.long, device=parent.device)
    width = parent.mask.shape[1]
    batch = _Batch(model, len(rows), width + extra, parent.device)
    for new, old in zip(batch.cache.growing_layers(), parent.cache.growing_layers(), strict=True):
        if not old.is_initialized:
            continue
        _, h, _, d = old._keys.shape
        new._keys = old._keys.new_empty((len(rows), h, new.capacity, d))
        new._values = old._values.new_empty((len(rows), h, new.capacity, old._values.shape[-1]))
        new._keys[:, :, : old.length] = old._keys[:, :, : old.length].index_select(0, index)
        new._values[:, :, : old.length] = old._values[:, :, : old.length].index_select(0, index)
        new.length, new.device, new.is_initialized = old.length, old.device, True
        new.keys, new.values = new._keys[:, :, : new.length], new._values[:, :, : new.length]
    batch.mask, batch.positions = parent.mask[index], parent.positions[index]
    return batch
