"""A pass with frozen contexts (`train.sft.dagger_frozen_context`): the loss of each example's
trained reply, its context computed without gradient.

DAgger's example is a whole conversation with the loss on its last reply only; the turns before
(`Encoded.context` tokens, most of the example) matter through their keys and values. Here each
example's context runs once, without gradient (a forward costs about a third of a forward and
backward, and keeps no activations); the exchange that ends in the trained reply then runs with
gradient, attending to the fixed keys and values. The loss is the same; the gradient drops the
terms through the context's keys and values (truncated backpropagation, as Transformer-XL's
memory). The contexts sit right-aligned in one cache, so examples of any depth share a
micro-batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ttt_lab.train.sft_rows import IGNORE, Encoded, common_prefix, parts, wide


def loss_sum(model, items: Sequence[Encoded], pad: int) -> torch.Tensor:
    """The summed cross-entropy of `items`' loss-carrying tokens past their contexts (fp32
    logits), every context's keys and values without gradient."""
    decoder, lm_head = parts(model)
    device = next(model.parameters()).device
    cache, width = _contexts(model, items)
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


def _contexts(model, items: Sequence[Encoded]):
    """Every item's context computed without gradient, each shared token prefix once (the items
    in token order, each continuing the keys and values of the one before up to their common
    prefix), right-aligned in one cache `width` columns wide; None and 0 when no item has one."""
    from transformers import DynamicCache

    width = max(e.context for e in items)
    if width == 0:
        return None, 0
    decoder, _ = parts(model)
    device = next(model.parameters()).device
    rows: list = [None] * len(items)
    last, done, prev = None, 0, -1
    with torch.no_grad():
        for i in sorted(range(len(items)), key=lambda i: items[i].ids[: items[i].context]):
            e = items[i]
            keep = min(done, common_prefix(last.ids, e.ids), e.context) if last is not None else 0
            cache = None
            if keep:
                cache = DynamicCache(ddp_cache_data=[(lay.keys[:, :, :keep], lay.values[:, :, :keep])
                                                     for lay in rows[prev].layers], config=model.config)
            if e.context > keep:
                cache = decoder(input_ids=torch.tensor([e.ids[keep:e.context]], device=device), cache=cache,
                                use_cache=True).past_key_values
            rows[i] = cache
            if e.context:
                last, done, prev = e, e.context, i
        layers = [tuple(_aligned([None if r is None else getattr(r.layers[k], part) for r in rows], width)
                        for part in ("keys", "values")) for k in range(model.config.num_hidden_layers)]
    return DynamicCache(ddp_cache_data=layers, config=model.config), width


def _aligned(tensors: list[torch.Tensor | None], width: int) -> torch.Tensor:
    """[1, heads, n_i, dim] tensors right-aligned in one zero-padded [b, heads, width, dim]."""
    like = next(t for t in tensors if t is not None)
    out = like.new_zeros((len(tensors), like.shape[1], width, like.shape[3]))
    for i, t in enumerate(tensors):
        if t is not None and t.shape[2]:
            out[i, :, width - t.shape[2]:] = t[0]
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
    """Each item's argmax next tokens and targets at its loss-carrying positions, without gradient:
    the items in token order, each computing only the tokens past its common prefix with the one
    before (whose keys, values and hidden states it reuses)."""
    from transformers import DynamicCache

    decoder, lm_head = parts(model)
    device = next(model.parameters()).device
    out: list[tuple[list[int], list[int]]] = [([], [])] * len(items)
    last: Encoded | None = None
    cache, hidden = None, torch.empty(0)
    with torch.no_grad():
        for i in sorted(range(len(items)), key=lambda i: items[i].ids):
            e = items[i]
            keep, start = 0, None
            if last is not None and cache is not None:
                keep = min(common_prefix(last.ids, e.ids), len(e.ids) - 1)
                start = DynamicCache(ddp_cache_data=[(lay.keys[:, :, :keep], lay.values[:, :, :keep])
                                                     for lay in cache.layers], config=model.config) if keep else None
            step = decoder(input_ids=torch.tensor([e.ids[keep:]], device=device), cache=start, use_cache=True)
            hidden = torch.cat([hidden[:, :keep], step.last_hidden_state], dim=1) if keep else step.last_hidden_state
            cache, last = step.past_key_values, e
            target = torch.tensor(e.labels[1:], device=device)
            sel = target != IGNORE
            out[i] = (lm_head(hidden[0, :-1][sel]).argmax(-1).tolist(), target[sel].tolist())
    return out
