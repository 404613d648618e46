"""A pass with frozen contexts (`train.sft.dagger_frozen_context`): the loss of each example's
trained reply, its context computed without gradient.

DAgger's example is a whole conversation with the loss on its last reply only; the turns before
(`Encoded.context` tokens, most of the example) matter through their keys and values. Here each
example's context runs once, without gradient (a forward alone, keeping no activations); the
exchange that ends in the trained reply then runs with gradient, attending to the fixed keys and
values. The loss is the same; the gradient drops the
terms through the context's keys and values (truncated backpropagation, as Transformer-XL's
memory). The contexts sit right-aligned in one cache, so examples of any depth share a
micro-batch. `Contexts` computes each distinct context once and keeps it, so that a round's passes
read their contexts instead of computing them at every update (`train.sft.dagger_context_once`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F

from ttt_lab.train.sft_rows import IGNORE, Encoded, common_prefix, parts, wide


def loss_sum(model, items: Sequence[Encoded], pad: int, contexts: Contexts | None = None) -> torch.Tensor:
    """The summed cross-entropy of `items`' loss-carrying tokens past their contexts (fp32
    logits), every context's keys and values without gradient: read from `contexts` (which must
    hold each of them), or computed here."""
    decoder, lm_head = parts(model)
    device = next(model.parameters()).device
    cache, width = _contexts(model, items) if contexts is None else contexts.cache(model, items)
    seg = max(len(e.ids) - e.context for e in items)
    ids = torch.full((len(items), seg), pad, dtype=torch.long)
    labels = torch.full((len(items), seg), IGNORE, dtype=torch.long)
    pos = torch.zeros((len(items), seg), dtype=torch.long)
    for i, e in enumerate(items):
        n = len(e.ids) - e.context
        ids[i, :n] = torch.tensor(e.ids[e.context:])
        labels[i, :n] = torch.tensor(e.labels[e.context:])
        pos[i] = torch.arange(e.context, e.context + seg)
    mask = _mask(items, width, seg).to(device)
    if getattr(model.config, "_attn_implementation", "sdpa") != "sdpa":  # eager adds a float mask
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, torch.finfo(dtype).min)
    hidden = decoder(input_ids=ids.to(device), position_ids=pos.to(device), attention_mask=mask, cache=cache,
                     use_cache=True).last_hidden_state
    target = labels[:, 1:].to(device)
    sel = target != IGNORE
    logits = wide(lm_head(hidden[:, :-1][sel]))
    return F.cross_entropy(logits, target[sel], reduction="sum")


def reply_only(e: Encoded) -> Encoded:
    """`e` with its context reaching the token that predicts its trained reply, where its loss is
    one reply's (one run of loss-carrying tokens); else `e` (a line passes whole). Only the
    positions that predict the reply keep gradient; the loss is the same."""
    trained = [i for i, t in enumerate(e.labels) if t != IGNORE]
    if not trained or trained[0] < 1 or trained[-1] - trained[0] + 1 != len(trained):
        return e
    return replace(e, context=max(e.context, trained[0] - 1))


class Contexts:
    """The keys and values of each distinct context of `items` (`Encoded.context` tokens), computed
    once without gradient in token order (`_in_token_order`) by the model as it is now, and kept;
    the tokens every context begins with are kept once. Read at later weights, they are the
    contexts of these weights, not of those (the truncation reaches back to them)."""

    def __init__(self, model, items: Sequence[Encoded]) -> None:
        distinct = list({tuple(e.ids[: e.context]): e for e in items if e.context}.values())
        keys = [tuple(e.ids[: e.context]) for e in distinct]
        self.shared = min((common_prefix(keys[0], k) for k in keys), default=0)
        self.tails: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.head: list[tuple[torch.Tensor, torch.Tensor]] = []
        with torch.no_grad():
            for i, cache, _ in _in_token_order(model, distinct, [e.context for e in distinct]):
                if not self.head:
                    self.head = [(lay.keys[0, :, : self.shared].clone(), lay.values[0, :, : self.shared].clone())
                                 for lay in cache.layers]
                self.tails[keys[i]] = [(lay.keys[0, :, self.shared:].clone(), lay.values[0, :, self.shared:].clone())
                                       for lay in cache.layers]

    @property
    def nbytes(self) -> int:
        """The memory the kept keys and values take."""
        return sum(t.nbytes for layers in [self.head, *self.tails.values()] for pair in layers for t in pair)

    def __len__(self) -> int:
        return len(self.tails)

    def cache(self, model, items: Sequence[Encoded]):
        """`items`' kept contexts right-aligned in one cache, as `_contexts` computes them."""
        from transformers import DynamicCache

        width = max(e.context for e in items)
        if width == 0:
            return None, 0
        rows = [self.tails[tuple(e.ids[: e.context])] if e.context else None for e in items]
        layers = [tuple(_aligned([() if r is None else (self.head[k][part], r[k][part]) for r in rows], width)
                        for part in (0, 1)) for k in range(model.config.num_hidden_layers)]
        return DynamicCache(ddp_cache_data=layers, config=model.config), width


def _contexts(model, items: Sequence[Encoded]):
    """Every item's context computed without gradient (`_in_token_order`), right-aligned in one
    cache `width` columns wide; None and 0 when no item has one."""
    from transformers import DynamicCache

    width = max(e.context for e in items)
    if width == 0:
        return None, 0
    rows: list = [None] * len(items)
    with torch.no_grad():
        for i, cache, _ in _in_token_order(model, items, [e.context for e in items]):
            rows[i] = cache
        layers = [tuple(_aligned([() if r is None else (getattr(r.layers[k], part)[0],) for r in rows], width)
                        for part in ("keys", "values")) for k in range(model.config.num_hidden_layers)]
    return DynamicCache(ddp_cache_data=layers, config=model.config), width


def _in_token_order(model, items: Sequence[Encoded], ends: Sequence[int], *, hidden: bool = False
                    ) -> Iterator[tuple[int, Any, torch.Tensor | None]]:
    """For each item with `ends[i]` > 0, in token order: its index, the keys and values of its
    first `ends[i]` tokens and (with `hidden`) their last hidden states. Each item computes only
    the tokens past its common prefix with the item before, whose keys, values and hidden states
    it continues."""
    from transformers import DynamicCache

    decoder, _ = parts(model)
    device = next(model.parameters()).device
    last: list[int] = []
    cache, states = None, None
    for i in sorted((i for i in range(len(items)) if ends[i]), key=lambda i: items[i].ids[: ends[i]]):
        ids = items[i].ids[: ends[i]]
        keep = common_prefix(last, ids)
        start = DynamicCache(ddp_cache_data=[(lay.keys[:, :, :keep], lay.values[:, :, :keep]) for lay in cache.layers],
                             config=model.config) if keep and cache is not None else None
        states = states[:, :keep] if keep and states is not None else None
        if len(ids) > keep:
            step = decoder(input_ids=torch.tensor([ids[keep:]], device=device), cache=start, use_cache=True)
            start = step.past_key_values
            if hidden:
                new = step.last_hidden_state
                states = new if states is None else torch.cat([states, new], dim=1)
        cache, last = start, ids
        yield i, cache, states


def _aligned(rows: list[Sequence[torch.Tensor]], width: int) -> torch.Tensor:
    """Each row's [heads, n, dim] pieces, one after another, right-aligned in one zero-padded
    [b, heads, width, dim] (a row without pieces: zeros)."""
    like = next(t for r in rows for t in r)
    out = like.new_zeros((len(rows), like.shape[0], width, like.shape[2]))
    for i, pieces in enumerate(rows):
        end = width - sum(t.shape[1] for t in pieces)
        for t in pieces:
            out[i, :, end: end + t.shape[1]] = t
            end += t.shape[1]
    return out


def _mask(items: Sequence[Encoded], width: int, seg: int) -> torch.Tensor:
    """[b, 1, seg, width + seg] bool: a segment token sees its own context's columns, then the
    segment causally (padding comes after a row's tokens, so none of them sees it)."""
    mask = torch.zeros((len(items), 1, seg, width + seg), dtype=torch.bool)
    mask[:, 0, :, width:] = torch.ones(seg, seg, dtype=torch.bool).tril()
    for i, e in enumerate(items):
        mask[i, 0, :, width - e.context: width] = True
    return mask


def predictions(model, items: Sequence[Encoded]) -> list[tuple[list[int], list[int]]]:
    """Each item's argmax next tokens and targets at its loss-carrying positions, without gradient,
    each shared token prefix computed once (`_in_token_order`)."""
    _, lm_head = parts(model)
    out: list[tuple[list[int], list[int]]] = [([], [])] * len(items)
    with torch.no_grad():
        for i, _, states in _in_token_order(model, items, [len(e.ids) for e in items], hidden=True):
            assert states is not None
            target = torch.tensor(items[i].labels[1:], device=states.device)
            sel = target != IGNORE
            out[i] = (lm_head(states[0, :-1][sel]).argmax(-1).tolist(), target[sel].tolist())
    return out
