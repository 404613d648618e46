"""Frozen contexts (`train.sft.dagger_frozen_context`): the examples' loss, and the gradient with
the contexts' keys and values held fixed."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.train.sft_lean import IGNORE

from .conftest import cfg_for
from .test_sft_lean import games, two_layers  # noqa: F401
from .test_sft_trie import positions


def truncated_reference(model, e) -> torch.Tensor:
    """One example through transformers' own model: its context under no_grad into a cache, then
    the rest with gradient (full logits, no padding, no mask); the summed cross-entropy."""
    ids = torch.tensor([e.ids])
    labels = torch.tensor(e.labels[e.context + 1:])
    cache = None
    if e.context:
        with torch.no_grad():
            cache = model(input_ids=ids[:, : e.context], use_cache=True).past_key_values
    logits = model(input_ids=ids[:, e.context:], cache=cache, use_cache=True).logits[0, :-1].float()
    return F.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="sum")


@pytest.mark.numerics
@pytest.mark.parametrize(("attention", "prompt"), [("sdpa", False), ("eager", False), ("sdpa", True)])
def test_a_frozen_pass_has_the_loss_and_the_gradient_with_fixed_contexts(two_layers: Path,  # noqa: F811
                                                                         tmp_path: Path, attention: str,
                                                                         prompt: bool) -> None:
    """Single-reply positions of every depth, a whole game (no context) and a repeated position in
    one micro-batch: the summed loss equals the examples' full one, and every gradient equals the
    one of each example computed apart with its context under no_grad. The truncation is real:
    the full gradient differs. With `prompt` the contexts reach each reply (`reply_only`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import batch_tensors, encode, loss_sum

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, attn_implementation=attention, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 3)
    items = [*positions(tok, records), encode(tok, records[0].messages)]
    items.append(items[1])
    if prompt:
        items = [sft_context.reply_only(e) for e in items]
    assert len({e.context for e in items}) > 3 and min(e.context for e in items) == 0

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        return out

    reference = sum(truncated_reference(model, e) for e in items)
    reference.backward()
    ref_grads = grads()
    loss = sft_context.loss_sum(model, items, tok.pad_token_id or 0)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(float(reference.detach()), rel=1e-7)
    # Llama's RMSNorm computes in fp32 in an fp64 model: the two orders of computation agree to
    # fp32 rounding, far inside the gap to the full gradient (asserted below)
    for g, r in zip(grads(), ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-6)
    full = sum(loss_sum(model, *batch_tensors([e], 0)) for e in items)
    full.backward()
    assert float(full) == pytest.approx(float(loss), rel=1e-7)
    gap = max(float((g - r).abs().max() / r.abs().max()) for g, r in zip(grads(), ref_grads, strict=True))
    assert gap > 1e-2


def test_the_context_ends_with_the_assistant_turn_before_the_first_trained_reply(two_layers: Path,  # noqa: F811
                                                                                  tmp_path: Path) -> None:
    """`Encoded.context`: the conversation up to the end of the reply before the first one that
    carries loss: 0 when the first reply does, and the tokens of that earlier conversation (with
    its reply) otherwise."""
    from transformers import AutoTokenizer

    from ttt_lab.train.sft_lean import encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    record = games(cfg_for(tmp_path), 1)[0]
    turns = [i for i, m in enumerate(record.messages) if m["role"] == "assistant"]
    assert encode(tok, record.messages).context == 0
    for k in range(1, len(turns)):
        e = encode(tok, record.messages[: turns[k] + 1], [False] * k + [True])
        before = encode(tok, record.messages[: turns[k - 1] + 1])
        assert e.ids[: e.context] == before.ids[: e.context]
        assert tok.decode(e.ids[: e.context]).endswith(record.messages[turns[k - 1]]["content"] + "<|im_end|>")
        assert record.messages[turns[k] - 1]["content"] in tok.decode(e.ids[e.context:])  # its user turn
        assert all(x == IGNORE for x in e.labels[: e.context + 1])


@pytest.mark.numerics
def test_an_update_mixing_lines_and_positions_has_the_padded_loss(two_layers: Path,  # noqa: F811
                                                                 tmp_path: Path, monkeypatch) -> None:
    """A frozen update over whole games and positions: its loss is the padded update's; the
    positions (frozen prompts reach even the first reply) go through `sft_context`, the games
    (nothing to freeze) through the padded path, never through `sft_context`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import LeanSFT, encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 3)
    data = positions(tok, records)[:5] + [encode(tok, r.messages) for r in records]
    loop = LeanSFT(model, tok, learning_rate=0.0, batch_size=len(data), micro_batch_size=2, bf16=False, seed=0)
    real, seen = sft_context.loss_sum, []
    monkeypatch.setattr(sft_context, "loss_sum", lambda m, items, *a: seen.extend(items) or real(m, items, *a))
    padded = loop.update(data)
    assert not seen
    for prompt in (False, True):
        assert loop.update(data, frozen_context=True, frozen_prompt=prompt) == pytest.approx(padded, rel=1e-9)
        assert all(e.context > 0 for e in seen) and {tuple(e.ids) for e in seen} <= {tuple(e.ids) for e in data[:5]}
        assert len(seen) == (5 if prompt else sum(e.context > 0 for e in data[:5]))
        seen.clear()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=8), st.booleans(), st.data())
def test_a_reply_only_context_keeps_every_loss_token_past_it(runs: list[tuple[int, bool]], first: bool,
                                                             data: st.DataObject) -> None:
    """`reply_only`: runs of tokens, some carrying loss, the example's own context anywhere before
    its first. One run of loss past the first token: the context ends at the token that predicts
    the run's first. Several runs (a line), none, or loss on the very first token: the example
    unchanged. Either way no loss-carrying token falls inside the context."""
    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_rows import Encoded

    labels = [7 if first else IGNORE] + [7 if loss else IGNORE for n, loss in runs for _ in range(n)]
    trained = [i for i, t in enumerate(labels) if t != IGNORE]
    context = data.draw(st.integers(0, max(0, (trained[0] if trained else len(labels)) - 1)))
    e = Encoded(list(range(len(labels))), labels, context=context)
    out = sft_context.reply_only(e)
    assert all(t == IGNORE for t in out.labels[1: out.context + 1])  # the first token's label never counts
    assert out.ids == e.ids and out.labels == e.labels and out.context >= e.context
    one_run = bool(trained) and trained[0] >= 1 and trained[-1] - trained[0] + 1 == len(trained)
    assert out.context == (trained[0] - 1 if one_run else e.context)


def test_the_loop_trains_on_frozen_contexts(two_layers: Path, tmp_path: Path) -> None:  # noqa: F811
    """`Schedule.frozen_context` runs the updates through frozen contexts (and `frozen_prompt`
    through frozen prompts): the weights move, each way differently."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train.sft_lean import LeanSFT, Schedule

    tok = AutoTokenizer.from_pretrained(two_layers)
    data = positions(tok, games(cfg_for(tmp_path), 2))
    after = []
    for frozen, prompt in ((False, False), (True, False), (True, True)):
        model = AutoModelForCausalLM.from_pretrained(two_layers)
        before = [p.detach().clone() for p in model.parameters()]
        loop = LeanSFT(model, tok, learning_rate=1e-2, batch_size=4, micro_batch_size=2, bf16=False, seed=0)
        loop.fit(data, 1, Schedule("constant", 0, frozen_context=frozen, frozen_prompt=prompt))
        after.append([p.detach().clone() for p in model.parameters()])
        assert not all(torch.equal(a, b) for a, b in zip(before, after[-1], strict=True))
    for i, j in ((0, 1), (1, 2), (0, 2)):
        assert not all(torch.allclose(a, b) for a, b in zip(after[i], after[j], strict=True))


@pytest.mark.parametrize(("frozen", "prompt", "once"), [(True, False, False), (True, True, False),
                                                     (False, False, False), (True, True, True)])
def test_dagger_passes_freeze_contexts_and_the_epochs_do_not(tiny_checkpoint: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch, frozen: bool,
                                                             prompt: bool, once: bool) -> None:
    """`train.sft.dagger_frozen_context` (and `dagger_frozen_prompt`): the rounds' passes go
    through frozen contexts (up to each correction's reply), the warm-up's epochs (whole games)
    never do; with `dagger_context_once` every such pass reads the contexts kept for the round,
    each computed once."""
    from ttt_lab.train import sft_context, sft_lean
    from ttt_lab.train.sft import run_sft

    from .test_sft_lean import tree_dagger_cfg

    real_fit, real_loss, fits, calls, at_reply = sft_lean.LeanSFT.fit_passes, sft_context.loss_sum, [], [], set()
    kept, real_kept = [], sft_context.Contexts

    def fit_passes(self, passes, schedule, *a, **k):
        fits.append((schedule.frozen_context, schedule.frozen_prompt))
        return real_fit(self, passes, schedule, *a, **k)

    def loss_sum(model, items, pad, contexts=None):
        calls.append((len(fits), contexts is not None and contexts is kept[-1]))
        for e in items:  # a correction (one reply carries loss): does its context reach the reply?
            trained = [i for i, t in enumerate(e.labels) if t != IGNORE]
            if trained[-1] - trained[0] + 1 == len(trained):
                at_reply.add(e.context == trained[0] - 1)
        return real_loss(model, items, pad, contexts)

    monkeypatch.setattr(sft_lean.LeanSFT, "fit_passes", fit_passes)
    monkeypatch.setattr(sft_context, "loss_sum", loss_sum)
    monkeypatch.setattr(sft_context, "Contexts", lambda *a: kept.append(real_kept(*a)) or kept[-1])
    cfg = tree_dagger_cfg(tmp_path, "train.sft.dagger_rounds=1", "train.sft.dagger_pool=latest",
                          f"train.sft.dagger_frozen_context={str(frozen).lower()}",
                          f"train.sft.dagger_frozen_prompt={str(prompt).lower()}",
                          f"train.sft.dagger_context_once={str(once).lower()}")
    one = run_sft(cfg, str(tiny_checkpoint), tmp_path / "sft")["dagger"][0]
    assert one["pool"] > 0 and fits == [(False, False), (frozen, prompt)]
    assert (set(calls) == {(2, once)}) if frozen else not calls
    assert at_reply == ({prompt} if frozen else set())
    assert len(kept) == once


def kept_reference(model, source, e) -> torch.Tensor:
    """`truncated_reference` with the context's keys and values computed by `source` instead."""
    ids, cache = torch.tensor([e.ids]), None
    if e.context:
        with torch.no_grad():
            cache = source(input_ids=ids[:, : e.context], use_cache=True).past_key_values
    logits = model(input_ids=ids[:, e.context:], cache=cache, use_cache=True).logits[0, :-1].float()
    return F.cross_entropy(logits, torch.tensor(e.labels[e.context + 1:]), ignore_index=IGNORE, reduction="sum")


@pytest.mark.numerics
def test_kept_contexts_are_those_of_the_weights_that_computed_them(two_layers: Path,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    """`Contexts`: kept, then read by the same weights, the loss and every gradient are the frozen
    pass's own; read by other weights, they are each example's context computed by the first
    weights, the rest by the second (and not what those compute themselves). The tokens every
    context shares are kept once."""
    import copy

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 3)
    items = [*positions(tok, records), encode(tok, records[0].messages)]
    items += [items[2], sft_context.reply_only(items[3])]
    kept = sft_context.Contexts(model, items)
    contexts = {tuple(e.ids[: e.context]) for e in items if e.context}
    short = min(len(c) for c in contexts)
    shared = next(i for i in range(short + 1) if i == short or len({c[i] for c in contexts}) > 1)
    assert len(kept) == len(contexts) and kept.shared == shared > 0
    per_token = 2 * sum(lay.self_attn.k_proj.weight.shape[0] for lay in model.model.layers) * 8
    assert kept.nbytes == per_token * (kept.shared + sum(len(c) - kept.shared for c in contexts))

    def loss_and_grads(m, contexts) -> tuple[float, list[torch.Tensor]]:
        m.zero_grad()
        loss = sft_context.loss_sum(m, items, 0, contexts)
        loss.backward()
        return float(loss), [p.grad.clone() for p in m.parameters()]

    read, live = loss_and_grads(model, kept), loss_and_grads(model, None)
    assert read[0] == pytest.approx(live[0], rel=1e-12)
    for a, b in zip(read[1], live[1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
    moved = copy.deepcopy(model)
    with torch.no_grad():
        for p in moved.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=p.dtype))
    stale = sft_context.loss_sum(moved, items, 0, kept)
    reference = sum(kept_reference(moved, model, e) for e in items)
    assert float(stale) == pytest.approx(float(reference), rel=1e-7)
    assert float(stale) != pytest.approx(float(sft_context.loss_sum(moved, items, 0)), rel=1e-4)


@pytest.fixture(scope="module")
def pool(two_layers: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:  # noqa: F811
    """An fp64 two-layer model and examples of every form: positions, a whole game, contexts to the reply."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path_factory.mktemp("pool")), 3)
    items = [*positions(tok, records), encode(tok, records[1].messages)]
    return model, items + [sft_context.reply_only(e) for e in items]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_kept_contexts_read_as_any_micro_batch_computes_them(pool: tuple, data: st.DataObject) -> None:
    """Any micro-batch (repeats, whole games, contexts to the reply or not) of the examples whose
    contexts were kept reads the cache that `_contexts` computes for it: the same width and the
    same keys and values, to fp64 rounding (the shared prefixes split elsewhere)."""
    from ttt_lab.train import sft_context

    model, pool = pool
    chosen = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6))
    kept = sft_context.Contexts(model, data.draw(st.permutations(pool)))
    (read, w_read), (live, w_live) = kept.cache(model, chosen), sft_context._contexts(model, chosen)
    assert w_read == w_live == max(e.context for e in chosen)
    if live is None:
        assert read is None
        return
    for a, b in zip(read.layers, live.layers, strict=True):
        torch.testing.assert_close(a.keys, b.keys, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(a.values, b.values, rtol=1e-12, atol=1e-12)


def test_a_round_with_kept_contexts_computes_each_once(two_layers: Path, tmp_path: Path,  # noqa: F811
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`Schedule.context_once`: a call's contexts are computed once, before its first update, and
    no update computes its own; at a zero rate (the weights still) every loss is the frozen
    passes' own; the kept contexts go with the call."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import LeanSFT, Schedule, encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 3)
    data = [*positions(tok, records), encode(tok, records[2].messages)]
    loop = LeanSFT(model, tok, learning_rate=0.0, batch_size=4, micro_batch_size=2, bf16=False, seed=0)
    live = loop.fit_passes([data, data[:5]], Schedule("constant", 0, frozen_context=True))
    real, computed, built = sft_context._contexts, [], []
    monkeypatch.setattr(sft_context, "_contexts", lambda m, items: computed.append(items) or real(m, items))
    monkeypatch.setattr(loop, "keep_contexts", lambda *a, real=loop.keep_contexts: built.append(a) or real(*a))
    loop.gen.manual_seed(0)
    once = loop.fit_passes([data, data[:5]], Schedule("constant", 0, frozen_context=True, context_once=True))
    assert once == pytest.approx(live, rel=1e-9) and not computed and len(built) == 1
    assert loop.contexts is None


def test_kept_contexts_are_built_as_the_passes_compute_them(two_layers: Path, tmp_path: Path,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`keep_contexts` builds under the loop's precision (the keys' and values' dtypes a frozen pass
    computes under autocast) and its passes' kernel (`train.sft.attention`), the model's own after."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import LeanSFT

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, attn_implementation="sdpa")
    data = positions(tok, games(cfg_for(tmp_path), 2))
    kernels, real = [], sft_context.Contexts
    monkeypatch.setattr(sft_context, "Contexts", lambda m, items: kernels.append(m.config._attn_implementation)
                        or real(m, items))
    for bf16 in (True, False):
        loop = LeanSFT(model, tok, learning_rate=0.0, batch_size=4, micro_batch_size=2, bf16=bf16, seed=0,
                       attention="eager")
        kept = loop.keep_contexts(data)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            live = sft_context._contexts(model, [e for e in data if e.context])[0]
        for part in (0, 1):  # keys, values: as a frozen pass computes them (bf16 where autocast makes them so)
            assert {pair[part].dtype for layers in [kept.head, *kept.tails.values()] for pair in layers} == {
                (lay.keys, lay.values)[part].dtype for lay in live.layers}
        assert (torch.bfloat16 in {lay.values.dtype for lay in live.layers}) == bf16
    assert kernels == ["eager", "eager"] and model.config._attn_implementation == "sdpa"


def test_kept_contexts_need_frozen_contexts(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"dagger_context_once.*dagger_frozen_context=true"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_context_once=true")
    cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_frozen_context=true",
            "train.sft.dagger_context_once=true")


def test_frozen_prompts_need_frozen_contexts(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"dagger_frozen_prompt.*dagger_frozen_context=true"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_frozen_prompt=true")
    cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_frozen_context=true",
            "train.sft.dagger_frozen_prompt=true")


def test_frozen_contexts_refuse_packed_dagger_passes(tmp_path: Path) -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match="dagger_frozen_context"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.pack_tokens=1024", "train.sft.dagger_order=prefix",
                "train.sft.dagger_frozen_context=true")


def test_shared_predictions_are_each_examples_own(two_layers: Path, tmp_path: Path) -> None:  # noqa: F811
    """`predictions`: games, their single-reply positions, a repeated game and a game that is a
    prefix of another, each computing only what it does not share with the one before: every
    item's argmax tokens and targets are those of its own full forward."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.train import sft_context
    from ttt_lab.train.sft_lean import encode

    tok = AutoTokenizer.from_pretrained(two_layers)
    model = AutoModelForCausalLM.from_pretrained(two_layers, dtype=torch.float64)
    records = games(cfg_for(tmp_path), 4)
    whole = [encode(tok, r.messages) for r in records]
    items = [*whole, *positions(tok, records[:2]), whole[0]]
    assert any(a.ids[: len(b.ids)] == b.ids for a in items for b in items if a is not b)
    read = sft_context.predictions(model, items)
    for e, (pred, target) in zip(items, read, strict=True):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([e.ids])).logits[0, :-1]
        labels = torch.tensor(e.labels[1:])
        sel = labels != IGNORE
        assert target == labels[sel].tolist() and len(target) == e.items
        assert pred == logits[sel].argmax(-1).tolist()
