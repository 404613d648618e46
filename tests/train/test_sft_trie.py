"""Prefix tries (`train.sft.pack_tokens`): the lean loop's loss and gradients, each distinct
prefix computed once."""

import itertools
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.train.sft_lean import IGNORE, Encoded
from ttt_lab.train.sft_trie import ancestors, pack

from .conftest import cfg_for
from .test_sft_lean import games, two_layers  # noqa: F401


def positions(tok, records) -> list:
    """Every reply of `records` as its own example (the conversation up to it, the loss on it only)."""
    from ttt_lab.train.sft_lean import encode

    out = []
    for r in records:
        turns = sum(m["role"] == "assistant" for m in r.messages)
        for k in range(turns):
            cut = [i for i, m in enumerate(r.messages) if m["role"] == "assistant"][k] + 1
            out.append(encode(tok, r.messages[:cut], [False] * k + [True]))
    return out


@pytest.mark.numerics
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_a_packed_update_has_the_examples_loss_and_gradients(two_layers: Path, tmp_path: Path,  # noqa: F811
                                                             attention: str) -> None:
    """Games, their positions one by one and a repeated game, packed into tries of any size: the
    summed loss and every gradient equal the examples' own, computed apart."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_trie
    from ttt_lab.train.sft_lean import batch_tensors, encode, loss_sum

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, attn_implementation=attention, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 4)
    items = [encode(tok, r.messages) for r in records] + positions(tok, records[:2])
    items.append(items[0])

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        return out

    reference = 0.0
    for e in items:
        ids, labels = batch_tensors([e], 0)
        loss = loss_sum(model, ids, labels, share_prefix=False)
        loss.backward()
        reference += float(loss.detach())
    ref_grads = grads()
    for max_tokens in (10**6, 400, 1):
        tries = pack(items, max_tokens)
        assert sum(t.weight.count(0) < len(t) for t in tries) == len(tries)
        total = 0.0
        for t in tries:
            loss = sft_trie.loss_sum(model, t)
            loss.backward()
            total += float(loss.detach())
        assert total == pytest.approx(reference, rel=1e-7)
        for g, r in zip(grads(), ref_grads, strict=True):
            torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-7)
    whole = pack(items, 10**6)
    assert len(whole) == 1 and len(whole[0]) < sum(len(e.ids) for e in items) / 2


sequences = st.lists(st.tuples(st.lists(st.integers(0, 3), min_size=1, max_size=8),
                               st.lists(st.booleans(), min_size=8, max_size=8)), min_size=1, max_size=12)


def _encoded(seqs) -> list[Encoded]:
    return [Encoded(ids, [t if f else IGNORE for t, f in zip(ids, flags, strict=False)]) for ids, flags in seqs]


@settings(max_examples=200, deadline=None)
@given(seqs=sequences, max_tokens=st.integers(1, 30))
def test_tries_hold_every_example_once_and_its_loss_counts(seqs, max_tokens: int) -> None:
    """Every example is a path of exactly one trie, each node its depth along it; a trie holds each
    distinct prefix of its examples once, keeps to `max_tokens` unless one example is longer, and
    its loss counts sum to the examples' loss-carrying tokens; a node sees its ancestors only."""
    items = _encoded(seqs)
    tries = pack(items, max_tokens)
    assert sum(sum(t.weight) for t in tries) == sum(e.items for e in items)
    held = []
    for t in tries:
        paths: dict[int, tuple[int, ...]] = {}
        for i in range(len(t)):
            p = t.parent[i]
            assert p < i
            paths[i] = (paths[p] if p >= 0 else ()) + (t.ids[i],)
            assert t.depth[i] == len(paths[i]) - 1
        assert len(set(paths.values())) == len(t)
        assert len(t) <= max_tokens or all(t.parent[i] == i - 1 for i in range(len(t)))
        held.append(set(paths.values()))
        mask = ancestors(t)
        for i in range(len(t)):
            seen = {paths[j] for j in range(len(t)) if mask[i, j]}
            assert seen == {paths[i][:k] for k in range(1, len(paths[i]) + 1)}
    assert all(any(tuple(e.ids) in h for h in held) for e in items)


def test_prefix_order_cuts_every_epoch_into_runs_of_token_order_and_packs_them(
        two_layers: Path, tmp_path: Path) -> None:  # noqa: F811
    """`order=prefix`: an epoch's updates hold every example once, each a run of neighbours in token
    order (around the end), and their start and order change from epoch to epoch; they are packed
    into tries (fewer tokens than the same epoch in random padded batches)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import LeanSFT

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers)
    records = games(cfg_for(tmp_path), 6)
    data = positions(tok, records)
    loop = LeanSFT(model, tok, learning_rate=1e-3, batch_size=4, micro_batch_size=4, bf16=False, seed=0,
                   pack_tokens=512, order="prefix")
    ranked = sorted(range(len(data)), key=lambda i: data[i].ids)
    epochs = [loop._updates(data, "prefix") for _ in range(4)]
    for updates in epochs:
        assert sorted(i for u in updates for i in u) == list(range(len(data)))
        for u in updates:
            at = [ranked.index(i) for i in u]
            assert all((b - a) % len(data) == 1 for a, b in itertools.pairwise(at))
    assert len({tuple(map(tuple, u)) for u in epochs}) > 1
    # a call's own order: token-order updates go through tries, random ones through padded batches
    from ttt_lab.train.sft_lean import Schedule

    loop.fit(data, 1, Schedule("constant", 0, 0.0, "prefix"))
    packed = loop.tokens
    loop.fit(data, 1, Schedule("constant", 0, 0.0, "random"))
    assert 0 < packed < loop.tokens - packed
