"""TRL's GRPOTrainer, with each update's micro-batches made of games of similar length.

TRL pads every completion of a generation batch to the longest game of the whole batch,
shuffles the games and cuts them into micro-batches: each forward/backward pass then runs
over the longest game's width. All micro-batches of one generation batch feed one
optimizer step (`steps_per_generation == gradient_accumulation_steps`, one iteration), so
their order and composition do not change the update for the per-token (dapo, cispo,
dr_grpo) and per-sequence (grpo) losses; only bnpo's per-micro-batch normaliser regroups.
Sorting the games by length and cutting each micro-batch to its own longest game saves the
padding's compute, and attention's cost is quadratic in it.

This reads TRL's private `_buffered_inputs` (the micro-batches `_prepare_inputs` keeps);
`tests/train/test_trainer.py` fails loudly when TRL changes it.
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer

PROMPT_KEYS = ("prompt_ids", "prompt_mask")
COMPLETION_KEYS = ("completion_ids", "completion_mask", "tool_mask", "old_per_token_logps",
                   "sampling_per_token_logps", "ref_per_token_logps")
ROW_KEYS = ("advantages",)
SCALAR_KEYS = ("num_items_in_batch",)


def regroup(batches: list[dict]) -> list[dict] | None:
    """The same rows, sorted by length into as many micro-batches, each cut to its own width;
    None when a batch holds anything else (images, importance ratios): left as TRL made it."""
    keys = set(batches[0])
    if not keys <= {*PROMPT_KEYS, *COMPLETION_KEYS, *ROW_KEYS, *SCALAR_KEYS} or len(batches) < 2:
        return None
    rows = {k: torch.cat([b[k] for b in batches]) for k in keys if k not in SCALAR_KEYS and batches[0][k] is not None}
    lengths = rows["completion_mask"].sum(dim=1) + rows["prompt_mask"].sum(dim=1)
    order = torch.argsort(lengths, stable=True)
    size = len(order) // len(batches)
    out = []
    for i in range(len(batches)):
        take = order[i * size : (i + 1) * size]
        part = {k: v[take] for k, v in rows.items()}
        width = int(part["completion_mask"].sum(dim=1).max())
        lead = int((part["prompt_mask"].sum(dim=0) == 0).sum())
        part.update({k: part[k][:, :width] for k in COMPLETION_KEYS if k in part})
        part.update({k: part[k][:, lead:] for k in PROMPT_KEYS})
        part.update({k: batches[i][k] for k in keys if k not in part})
        out.append(part)
    return out


def plain_logps(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                temperature: float, entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probabilities (and entropies) of the last `logits_to_keep` tokens from the
    model's logits, 0 where `attention_mask` is 0: what TRL's chunked LM-head kernel computes,
    which saves memory on a large vocabulary but on a small one costs several times the plain
    head's time (docs/benchmarks.md, "Kernels and precision")."""
    out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=logits_to_keep + 1, use_cache=False)
    logp = torch.log_softmax(out.logits[:, :-1].float() / temperature, dim=-1)
    keep = attention_mask[:, -logits_to_keep:].bool()
    per_token = logp.gather(-1, input_ids[:, -logits_to_keep:, None]).squeeze(-1).masked_fill(~keep, 0.0)
    ent = -(logp.exp() * logp).sum(-1).masked_fill(~keep, 0.0) if entropy else None
    return per_token, ent


def scored_logps(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                 scored: torch.Tensor, temperature: float, entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`plain_logps` with the LM head only where `scored` (batch x `logits_to_keep`) is 1, 0 elsewhere:
    the same values there, so the same gradients of a loss masked by `scored`. In a game the loss
    masks the environment's messages (`tool_mask`), most of a completion, and TRL's kernel scores
    every position, the prompt's too, on a CPU."""
    from ttt_lab.train.sft_rows import parts, wide

    decoder, head = parts(model)
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    at = scored.bool() & attention_mask[:, -logits_to_keep:].bool()
    logp = torch.log_softmax(wide(head(hidden[:, -logits_to_keep - 1: -1][at])) / temperature, dim=-1)
    per_token = logp.gather(-1, input_ids[:, -logits_to_keep:][at][:, None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1) if entropy else None
    return (per_token.new_zeros(at.shape).masked_scatter(at, per_token),
            None if ent is None else ent.new_zeros(at.shape).masked_scatter(at, ent))


PLAIN_HEAD_VOCAB = 4096
"""Vocabularies up to this size score with `plain_logps` (its logits cost little memory)."""


class GameTrainer(GRPOTrainer):
    """`GRPOTrainer` whose training micro-batches come from `regroup`, and which scores tokens
    (text-only inputs) in its loss with `scored_logps` at the model's own tokens, elsewhere with
    `plain_logps` on a small vocabulary."""

    _scored: torch.Tensor | None = None
    """The loss's micro-batch's `tool_mask` (1: the model's tokens) while `compute_loss` runs."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self._scored = inputs.get("tool_mask")
        try:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        finally:
            self._scored = None

    def note(self, values: dict[str, float]) -> None:
        """Metrics of this step beyond TRL's own, logged with them as `train/<key>` (TRL averages
        what its `_metrics` collected since the last log)."""
        for key, value in values.items():
            self._metrics["train"][key].append(float(value))

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        simple = not compute_aux_loss and all(v is None for v in extra.values()) and not self.args.cast_lm_head_to_fp32
        scored = self._scored if simple and self._scored is not None else None
        # DDP averages gradients only through its wrapper's forward: the decoder is not called apart
        wrapped = isinstance(model, torch.nn.parallel.DistributedDataParallel)
        if scored is not None and (wrapped or scored.shape != (input_ids.size(0), logits_to_keep)):
            scored = None
        if not simple or (scored is None and self.model.config.get_text_config().vocab_size > PLAIN_HEAD_VOCAB):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **extra)
        size = batch_size or input_ids.size(0)
        parts = []
        with self.accelerator.autocast():
            for i in range(0, input_ids.size(0), size):
                rows = slice(i, i + size)
                parts.append(plain_logps(model, input_ids[rows], attention_mask[rows], logits_to_keep, self.temperature,
                                         compute_entropy) if scored is None else
                             scored_logps(model, input_ids[rows], attention_mask[rows], logits_to_keep, scored[rows],
                                          self.temperature, compute_entropy))
        logps = torch.cat([p for p, _ in parts])
        return logps, torch.cat([e for _, e in parts]) if compute_entropy else None, None

    def _prepare_inputs(self, generation_batch):
        inputs = super()._prepare_inputs(generation_batch)
        if not self.model.training or self._buffered_inputs is getattr(self, "_seen", None):
            return inputs
        grouped = regroup(self._buffered_inputs)
        if grouped is not None:
            self._buffered_inputs = grouped
            inputs = grouped[self._step % self.args.steps_per_generation]
        self._seen = self._buffered_inputs
        return inputs
