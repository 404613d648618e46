"""Examples packed into a prefix tree (`train.sft.pack=true`): the lean loop's loss with every
distinct token prefix computed once.

Games and DAgger's positions repeat long prefixes: the system prompt, and the openings the
examples share. A trie of the examples' token sequences holds each distinct prefix once; one row
of its nodes, each at its own depth (the position id) and attending to its ancestors only (a 4D
mask), gives every node the hidden state it has in each example that holds it. A node's loss
counts once per example whose label is there, so the summed loss and its gradients equal the
examples' one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ttt_lab.train.sft_rows import IGNORE, Encoded, common_prefix, parts, wide


@dataclass(frozen=True)
class Trie:
    ids: list[int]
    """The nodes' tokens, parents before children."""
    parent: list[int]
    """Each node's parent (-1 for a first token)."""
    depth: list[int]
    """Each node's position in its examples (the position id)."""
    weight: list[int]
    """How many examples carry loss at the node's token (predicted from its parent's state)."""

    def __len__(self) -> int:
        return len(self.ids)


def build(items: Sequence[Encoded]) -> Trie:
    """The prefix tree of `items`' token sequences, with their loss counts."""
    ids: list[int] = []
    parent: list[int] = []
    depth: list[int] = []
    weight: list[int] = []
    child: dict[tuple[int, int], int] = {}
    for e in items:
        node = -1
        for i, (tok, lab) in enumerate(zip(e.ids, e.labels, strict=True)):
            nxt = child.get((node, tok))
            if nxt is None:
                nxt = child[(node, tok)] = len(ids)
                ids.append(tok)
                parent.append(node)
                depth.append(i)
                weight.append(0)
            if i and lab != IGNORE:
                weight[nxt] += 1
            node = nxt
    return Trie(ids, parent, depth, weight)


def pack(items: Sequence[Encoded], max_tokens: int) -> list[Trie]:
    """`items` in token order, cut into tries of at most `max_tokens` nodes (an example longer than
    that gets a trie of its own). In token order an example adds the tokens past its common prefix
    with the one before it."""
    order = sorted(items, key=lambda e: e.ids)
    groups: list[list[Encoded]] = []
    size = 0
    for k, e in enumerate(order):
        new = len(e.ids) - (common_prefix(order[k - 1].ids, e.ids) if k else 0)
        if groups and size + new <= max_tokens:
            groups[-1].append(e)
            size += new
        else:
            groups.append([e])
            size = len(e.ids)
    return [build(g) for g in groups]


def ancestors(trie: Trie) -> torch.Tensor:
    """[n, n] bool: node i sees node j where j is i or one of its ancestors."""
    n = len(trie)
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i, p in enumerate(trie.parent):
        if p >= 0:
            mask[i] = mask[p]
        mask[i, i] = True
    return mask


def loss_sum(model, trie: Trie) -> torch.Tensor:
    """The summed cross-entropy of every example's loss-carrying tokens in `trie` (fp32 logits)."""
    decoder, lm_head = parts(model)
    device = next(model.parameters()).device
    ids = torch.tensor([trie.ids], device=device)
    pos = torch.tensor([trie.depth], device=device)
    mask = ancestors(trie).to(device)[None, None]
    if getattr(model.config, "_attn_implementation", "sdpa") != "sdpa":  # eager adds a float mask
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, torch.finfo(dtype).min)
    hidden = decoder(input_ids=ids, position_ids=pos, attention_mask=mask, use_cache=False).last_hidden_state[0]
    nodes = [i for i, w in enumerate(trie.weight) if w]
    if not nodes:
        return hidden.sum() * 0.0
    at = torch.tensor([trie.parent[i] for i in nodes], device=device)
    logits = wide(lm_head(hidden[at]))
    target = torch.tensor([trie.ids[i] for i in nodes], device=device)
    weight = torch.tensor([float(trie.weight[i]) for i in nodes], device=device, dtype=logits.dtype)
    return (F.cross_entropy(logits, target, reduction="none") * weight).sum()
