"""ttt-lab's own SFT loop (`train.sft.loop=lean`): TRL's loss, at a lower cost per pass.

The loss is TRL's assistant-only loss: the cross-entropy of every token the chat template marks
as the model's (`{% generation %}`), summed over an optimizer step's games and divided by their
count of such tokens (TRL's `num_items_in_batch`). Three things make a pass cheaper without
changing it:

- **The LM head only where the loss is** (`head=loss`): the hidden states of the positions
  whose next token carries loss go through the head, not all of them (a game is about 450
  tokens, the loss is on about 30; the head is a 49k-vocabulary matmul).
- **The shared prefix once** (`share_prefix`): every game of a micro-batch begins with the same
  system prompt; its keys and values are computed for one game and broadcast to all (their
  gradients sum over the games, exactly as if each computed its own). The prefix stops before
  the first token that carries loss.
- **Games sorted by length within an update**, so micro-batches pad little; an update's
  gradient does not depend on how it is cut.

Games are right-padded and attend causally, so padding never reaches a real token.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ttt_lab import log
from ttt_lab.train import sft_context
from ttt_lab.train.sft_rows import IGNORE, Encoded, parts, wide

LOG = log.get("train")


def encode(tokenizer, messages: list[dict[str, str]], train_on: Sequence[bool] | None = None, *,
           every_token: bool = False) -> Encoded:
    """`messages` through the chat template, the loss on the assistant turns (`train_on`: one
    flag per assistant message; unset: all of them), or on every token (`every_token`: TRL's
    loss with `assistant_only_loss=False`)."""
    if every_token:
        ids = list(tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"])
        return Encoded(ids, list(ids))
    enc = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
    turns = list(mask)
    if train_on is not None:
        span, inside = -1, False
        for i, m in enumerate(mask):
            if m and not inside:
                span += 1
            inside = bool(m)
            if m and not train_on[span]:
                mask[i] = 0
        if span + 1 != len(train_on):
            raise ValueError(f"{len(train_on)} flags for {span + 1} assistant turns")
    return Encoded(ids, [t if m else IGNORE for t, m in zip(ids, mask, strict=True)], _context(turns, mask))


def _context(assistant: Sequence[int], trained: Sequence[int]) -> int:
    """The end of the last assistant turn before the first trained token (0: none)."""
    first = next((i for i, m in enumerate(trained) if m), 0)
    return next((i + 1 for i in range(first - 1, -1, -1) if assistant[i]), 0)


def batch_tensors(items: Sequence[Encoded], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(e.ids) for e in items)
    ids = torch.full((len(items), n), pad, dtype=torch.long)
    labels = torch.full((len(items), n), IGNORE, dtype=torch.long)
    for i, e in enumerate(items):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        labels[i, : len(e.labels)] = torch.tensor(e.labels)
    return ids, labels


def shared_prefix(ids: torch.Tensor, labels: torch.Tensor) -> int:
    """Length of the tokens every row begins with, stopped so that no position whose next token
    carries loss falls inside it (0 for a single row: nothing to share)."""
    if ids.shape[0] < 2:
        return 0
    same = (ids == ids[:1]).all(dim=0)
    lcp = int(same.long().cumprod(0).sum())
    has = (labels != IGNORE).any(dim=0).nonzero()
    first_label = int(has[0]) if len(has) else ids.shape[1]
    return max(0, min(lcp, first_label - 1, ids.shape[1] - 1))


def hidden_states(model, ids: torch.Tensor, prefix: int) -> torch.Tensor:
    """The last hidden states of positions `prefix`.. of `ids` (the first `prefix` tokens, common
    to every row, computed once for the first row and broadcast)."""
    decoder, _ = parts(model)
    if prefix == 0:
        return decoder(input_ids=ids, use_cache=False).last_hidden_state
    from transformers import DynamicCache

    head = decoder(input_ids=ids[:1, :prefix], use_cache=True).past_key_values
    b = ids.shape[0]
    layers = [(lay.keys.expand(b, -1, -1, -1), lay.values.expand(b, -1, -1, -1)) for lay in head.layers]
    cache = DynamicCache(ddp_cache_data=layers, config=model.config)
    return decoder(input_ids=ids[:, prefix:], cache=cache, use_cache=True).last_hidden_state


def loss_sum(model, ids: torch.Tensor, labels: torch.Tensor, *, head: str = "loss", share_prefix: bool = True
             ) -> torch.Tensor:
    """The summed cross-entropy of the tokens that carry loss (fp32 logits, as transformers')."""
    if head == "full":
        logits = wide(model(input_ids=ids, use_cache=False).logits[:, :-1])
        target = labels[:, 1:]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=IGNORE,
                               reduction="sum")
    prefix = shared_prefix(ids, labels) if share_prefix else 0
    hidden = hidden_states(model, ids, prefix)  # positions prefix .. T-1
    target = labels[:, prefix + 1:]
    sel = target != IGNORE
    _, lm_head = parts(model)
    logits = wide(lm_head(hidden[:, :-1][sel]))
    return F.cross_entropy(logits, target[sel], reduction="sum")


@contextlib.contextmanager
def attention_kernel(model, kernel: str | None) -> Iterator[None]:
    """`model` computes attention with `kernel` (transformers' implementation name) inside the
    block, its own after; None: its own throughout. The same attention: only the kernel differs."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    own = base.config._attn_implementation
    if kernel is None or kernel == own:
        yield
        return
    base.set_attn_implementation(kernel)
    try:
        yield
    finally:
        base.set_attn_implementation(own)


@dataclass
class Schedule:
    name: str = "constant_with_warmup"
    warmup_steps: int = 0
    learning_rate: float | None = None
    """The peak rate of this call's steps; None: the loop's own."""
    order: str | None = None
    """How this call cuts its updates (random | prefix); None: the loop's own."""
    frozen_context: bool = False
    """This call's padded passes compute each example's context (`Encoded.context`) without
    gradient (`sft_context`)."""
    frozen_prompt: bool = False
    """With `frozen_context`, a single-reply example's context reaches its reply
    (`sft_context.reply_only`)."""
    context_once: bool = False
    """With `frozen_context`, the contexts are computed once, before this call's first step, and
    read by every pass (`sft_context.Contexts`)."""


class LeanSFT:
    """An AdamW (TRL's defaults: fused, no weight decay, gradients clipped at norm 1) that lives across
    calls to `fit`, so DAgger rounds continue the warm-up's optimizer."""

    def __init__(self, model, tokenizer, *, learning_rate: float, batch_size: int, micro_batch_size: int,
                 bf16: bool, seed: int, head: str = "loss", share_prefix: bool = True, max_grad_norm: float = 1.0,
                 pack_tokens: int = 0, order: str = "random", attention: str | None = None) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.attention = attention
        self.pack_tokens, self.order = pack_tokens, order
        self.lr, self.batch, self.micro = learning_rate, batch_size, max(1, min(micro_batch_size, batch_size))
        self.bf16, self.head, self.share_prefix, self.max_grad_norm = bf16, head, share_prefix, max_grad_norm
        # fused: one kernel for every tensor's update (transformers' default optimizer, `adamw_torch_fused`)
        self.opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=learning_rate,
                                     weight_decay=0.0, fused=True)
        self.gen = torch.Generator().manual_seed(seed)
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.step = 0
        self.tokens = 0
        self.seconds = 0.0
        self.contexts: sft_context.Contexts | None = None
        """Kept contexts that frozen-context updates read instead of computing (`keep_contexts`)."""

    def update(self, games: Sequence[Encoded], packed: bool = False, frozen_context: bool = False,
               frozen_prompt: bool = False) -> float:
        """One optimizer step over `games` (in prefix tries when `packed` and `pack_tokens`; padded,
        their contexts without gradient when `frozen_context`, up to the reply when also
        `frozen_prompt`); the mean loss per loss-carrying token."""
        device = next(self.model.parameters()).device
        items = sum(g.items for g in games)
        if items == 0:
            return float("nan")
        t = time.perf_counter()
        with attention_kernel(self.model, self.attention):
            if packed and self.pack_tokens:
                total = self._packed(games, items, device)
            else:
                if frozen_context and frozen_prompt:
                    games = [sft_context.reply_only(g) for g in games]
                total = self._padded(games, items, device, frozen_context)
        if self.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.seconds += time.perf_counter() - t
        self.step += 1
        return total

    def _padded(self, games: Sequence[Encoded], items: int, device, frozen_context: bool = False) -> float:
        """The update's games, sorted by the length they compute with gradient, in padded
        micro-batches; with `frozen_context`, those with a context through `sft_context` and the
        rest (nothing to freeze: a line, a first reply) as without it; the loss."""
        frozen, whole = self.micro_batches(games, frozen_context)
        total = 0.0
        for chunk, cut in [(c, True) for c in frozen] + [(c, False) for c in whole]:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.bf16):
                if cut:
                    loss = sft_context.loss_sum(self.model, chunk, self.pad, self.contexts) / items
                else:
                    ids, labels = batch_tensors(chunk, self.pad)
                    loss = loss_sum(self.model, ids.to(device), labels.to(device), head=self.head,
                                    share_prefix=self.share_prefix) / items
            loss.backward()
            total += float(loss.detach())
            self.tokens += len(chunk) * max(len(g.ids) for g in chunk)  # the padded rows' tokens
        return total

    def micro_batches(self, games: Sequence[Encoded], frozen_context: bool
                      ) -> tuple[list[Sequence[Encoded]], list[Sequence[Encoded]]]:
        """A padded update's micro-batches: those whose contexts run without gradient (with
        `frozen_context`, the games that have one, by the length computed with gradient), then the
        rest (by length)."""
        frozen = sorted((g for g in games if frozen_context and g.context), key=lambda g: len(g.ids) - g.context)
        whole = sorted((g for g in games if not (frozen_context and g.context)), key=lambda g: len(g.ids))
        return self._chunks(frozen, True), self._chunks(whole)

    def keep_contexts(self, games: Sequence[Encoded], frozen_prompt: bool = False) -> sft_context.Contexts:
        """Compute the contexts of `games` (up to each reply with `frozen_prompt`) as a frozen-context
        update would (this loop's kernel and precision, no gradient), and keep them for the updates
        that follow (`contexts`); the seconds count as the passes'."""
        device = next(self.model.parameters()).device
        t = time.perf_counter()
        items = [sft_context.reply_only(g) for g in games] if frozen_prompt else list(games)
        with attention_kernel(self.model, self.attention), torch.autocast(device.type, dtype=torch.bfloat16,
                                                                          enabled=self.bf16):
            self.contexts = sft_context.Contexts(self.model, items)
        took = time.perf_counter() - t
        self.seconds += took
        LOG.info(f"{len(self.contexts)} contexts computed once and kept ({self.contexts.nbytes / 2**20:.0f} MiB, "
                 f"{took:.0f} s)")
        return self.contexts

    def _chunks(self, games: Sequence[Encoded], frozen_context: bool = False) -> list[Sequence[Encoded]]:
        """Micro-batches of `micro_batch_size` games; with `frozen_context`, of as many as keep the
        tokens computed with gradient within what `micro_batch_size` of the longest game hold."""
        if not games:
            return []
        if not frozen_context:
            return [games[i: i + self.micro] for i in range(0, len(games), self.micro)]
        budget = self.micro * max(len(g.ids) for g in games)
        out: list[Sequence[Encoded]] = []
        start = 0
        for i, g in enumerate(games):  # in order of the length with gradient: the last one is the widest
            if i > start and (i + 1 - start) * (len(g.ids) - g.context) > budget:
                out.append(games[start:i])
                start = i
        return [*out, games[start:]]

    def _packed(self, games: Sequence[Encoded], items: int, device) -> float:
        """The update's games as prefix tries (`sft_trie`), each trie's loss backpropagated; the loss."""
        from ttt_lab.train import sft_trie

        total = 0.0
        for trie in sft_trie.pack(games, self.pack_tokens):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.bf16):
                loss = sft_trie.loss_sum(self.model, trie) / items
            loss.backward()
            total += float(loss.detach())
            self.tokens += len(trie)
        return total

    def fit(self, data: Sequence[Encoded], epochs: int, schedule: Schedule,
            on_step: Callable[[int, float], None] | None = None,
            on_epoch: Callable[[int], None] | None = None) -> list[float]:
        """`epochs` shuffled passes over `data` in updates of `batch_size` games under `schedule`
        (transformers' scheduler names; this call's steps only)."""
        return self.fit_passes([data] * epochs, schedule, on_step=on_step, on_epoch=on_epoch)

    def fit_passes(self, passes: Sequence[Sequence[Encoded]], schedule: Schedule,
                   on_step: Callable[[int, float], None] | None = None,
                   on_epoch: Callable[[int], None] | None = None) -> list[float]:
        """One shuffled pass over each of `passes` in turn, under one `schedule` that spans them all."""
        from transformers import get_scheduler

        for group in self.opt.param_groups:
            group["lr"] = self.lr if schedule.learning_rate is None else schedule.learning_rate
            group.pop("initial_lr", None)
        sched = get_scheduler(schedule.name, self.opt, num_warmup_steps=schedule.warmup_steps,
                              num_training_steps=sum(math.ceil(len(d) / self.batch) for d in passes))
        self.model.train()
        if schedule.frozen_context and schedule.context_once:
            self.keep_contexts([g for data in passes for g in data], schedule.frozen_prompt)
        try:
            return self._passes(passes, schedule, sched, on_step, on_epoch)
        finally:
            self.contexts = None

    def _passes(self, passes: Sequence[Sequence[Encoded]], schedule: Schedule, sched,
                on_step: Callable[[int, float], None] | None, on_epoch: Callable[[int], None] | None) -> list[float]:
        losses = []
        order = schedule.order or self.order
        for epoch, data in enumerate(passes):
            for update in self._updates(data, order):
                loss = self.update([data[i] for i in update], packed=order == "prefix",
                                   frozen_context=schedule.frozen_context,
                                   frozen_prompt=schedule.frozen_prompt)
                sched.step()
                losses.append(loss)
                if on_step:
                    on_step(self.step, loss)
            if on_epoch:
                on_epoch(epoch)
        return losses

    def _updates(self, data: Sequence[Encoded], order_name: str) -> list[list[int]]:
        """An epoch's updates of `batch_size` indices: a random draw (`order=random`), or runs of
        the data in token order from a random start, the runs in random order (`order=prefix`:
        an update's examples share their openings, so a packed trie holds fewer tokens)."""
        n = len(data)
        if order_name == "random":
            order = torch.randperm(n, generator=self.gen).tolist()
        else:
            start = int(torch.randint(n, (1,), generator=self.gen))
            ranked = sorted(range(n), key=lambda i: data[i].ids)
            order = ranked[start:] + ranked[:start]
        runs = [order[b: b + self.batch] for b in range(0, n, self.batch)]
        if order_name == "random":
            return runs
        return [runs[i] for i in torch.randperm(len(runs), generator=self.gen).tolist()]


def accuracy(model, games: Sequence[Encoded], digits: dict[int, int],
             optimal: Sequence[Sequence[set[int] | None]], *, bf16: bool) -> dict[str, float]:
    """Teacher-forced accuracy over `games`' assistant turns: `reply`: every token of the reply
    argmax-right; `move`: the move digit right (the teacher's); `optimal`: the argmax digit is
    one of the value-keeping moves (`optimal[g][k]`, the cells of game g's k-th turn; None: a
    turn not counted, e.g. a position already read). `digits`: token id -> cell. The games'
    shared openings are computed once (`sft_context.predictions`)."""
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    try:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            read = sft_context.predictions(model, games)
    finally:
        model.train(was)
    right = move = keep = turns = 0
    for g, (e, (pred, target)) in enumerate(zip(games, read, strict=True)):
        pos = 0
        for k, span in enumerate(_spans(e.labels)):
            p, t = pred[pos: pos + span], target[pos: pos + span]
            pos += span
            if optimal[g][k] is None:
                continue
            turns += 1
            right += p == t
            at = [j for j, x in enumerate(t) if x in digits]
            if at:
                j = at[0]
                move += p[j] == t[j]
                keep += digits.get(p[j], -1) in optimal[g][k]  # type: ignore[operator]
    n = max(turns, 1)
    return {"turns": turns, "reply": right / n, "move": move / n, "optimal": keep / n}


def _spans(labels: Sequence[int]) -> list[int]:
    """Lengths of the runs of loss-carrying labels (after the first token), in order."""
    out, run = [], 0
    for x in labels[1:]:
        if x != IGNORE:
            run += 1
        elif run:
            out.append(run)
            run = 0
    if run:
        out.append(run)
    return out
