import itertools
from pathlib import Path

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ttt_lab.train import trainer
from ttt_lab.train.trainer import regroup

from .conftest import cfg_for

pytestmark = pytest.mark.numerics


def _padded(lengths: list[tuple[int, int]], micro: int) -> list[dict]:
    """TRL-shaped micro-batches: prompts left-padded, completions right-padded to the batch's longest."""
    pw, cw = max(p for p, _ in lengths), max(c for _, c in lengths)
    pm = torch.tensor([[0] * (pw - p) + [1] * p for p, _ in lengths])
    cm = torch.tensor([[1] * c + [0] * (cw - c) for _, c in lengths])
    ids = torch.arange(len(lengths))[:, None]
    whole = {"prompt_ids": pm * (100 + ids), "prompt_mask": pm, "completion_ids": cm * (1000 + ids),
             "completion_mask": cm, "advantages": ids.flatten().float(), "num_items_in_batch": cm.sum()}
    n = len(lengths) // micro
    return [{k: (v if v.ndim == 0 else v[i * micro : (i + 1) * micro]) for k, v in whole.items()} for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 12)), min_size=2, max_size=24), st.integers(1, 4))
def test_regroup_keeps_every_row_and_cuts_each_micro_batch_to_its_longest(lengths, micro) -> None:
    lengths = lengths[: len(lengths) // micro * micro]
    assume(len(lengths) >= 2 * micro)
    batches = _padded(lengths, micro)
    out = regroup(batches)
    assert out is not None and len(out) == len(batches)

    def rows(bs: list[dict]) -> list[tuple]:
        return sorted((tuple(b["prompt_ids"][i][b["prompt_mask"][i] == 1].tolist()),
                       tuple(b["completion_ids"][i][b["completion_mask"][i] == 1].tolist()),
                       float(b["advantages"][i])) for b in bs for i in range(len(b["advantages"])))

    assert rows(out) == rows(batches)
    for b in out:
        assert b["completion_mask"][:, -1].any() and b["prompt_mask"][:, 0].any(), "no all-padding column left"
        assert torch.equal(b["num_items_in_batch"], batches[0]["num_items_in_batch"])
    totals = [(b["completion_mask"].sum(1) + b["prompt_mask"].sum(1)).tolist() for b in out]
    assert all(max(a) <= min(b) for a, b in itertools.pairwise(totals)), "sorted by length"


def test_regroup_leaves_batches_it_does_not_know_alone() -> None:
    batches = _padded([(2, 3), (3, 5), (1, 1), (2, 2)], 2)
    for b in batches:
        b["pixel_values"] = torch.zeros(2, 3)
    assert regroup(batches) is None


def test_trl_still_buffers_micro_batches_where_regroup_reads_them() -> None:
    import inspect

    from trl import GRPOTrainer

    src = inspect.getsource(GRPOTrainer._prepare_inputs)
    assert "self._buffered_inputs = " in src
    assert "self._buffered_inputs[self._step % self.args.steps_per_generation]" in src


def test_a_regrouped_update_is_the_update_trl_would_make(sft_run: tuple[Path, dict], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Same games, same gradient: TRL's grad norm and loss match, while the passes got narrower.
    Within what this machine's kernels make of the same games cut into other micro-batches: the
    narrower passes sum the gradient in another order too."""
    from transformers import TrainerCallback

    from ttt_lab.train import grpo

    real, scoring = trainer.GameTrainer.compute_loss, trainer.scored_logps
    scored: list[tuple[int, int]] = []

    def counted(model, ids, mask, keep, at, *a):
        scored.append((int(at.sum()), int(mask[:, -keep:].sum())))
        return scoring(model, ids, mask, keep, at, *a)

    monkeypatch.setattr(trainer, "scored_logps", counted)

    def one_step(tag: str, micro: int = 4) -> tuple[dict, list[int]]:
        found: dict = {}
        widths: list[int] = []

        class Log(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                found.update(logs or {})

        def spy(self, model, inputs, *a, **k):
            widths.append(inputs["completion_ids"].shape[1])
            return real(self, model, inputs, *a, **k)

        monkeypatch.setattr(trainer.GameTrainer, "compute_loss", spy)
        cfg = cfg_for(tmp_path / tag, "steps=1", "temperature=1.5", f"train.micro_batch_size={micro}")
        grpo.run_rl_phase(cfg, cfg.train.phases[0], 0, str(sft_run[0]), tmp_path / tag / "rl", callbacks=[Log()])
        return found, widths

    grouped, narrow = one_step("grouped")
    monkeypatch.setattr(trainer, "regroup", lambda batches: None)
    plain, wide = one_step("plain")
    halves, _ = one_step("halves", micro=2)
    assert len(narrow) == len(wide) == 4
    assert scored and all(0 < n < m for n, m in scored)  # the loss scored the model's tokens, not the games
    assert len(set(wide)) == 1 and min(narrow) < wide[0]
    for key, floor in (("grad_norm", 1e-6), ("loss", 1e-7)):
        spread = abs(halves[key] - plain[key])  # the same games, summed in another order
        assert abs(grouped[key] - plain[key]) <= max(10 * spread, floor), (key, grouped[key], plain[key], spread)


def model_and_fused(checkpoint: Path, temperature: float, *, seed: int, width: int):
    """The tiny model with large random weights, a copy with TRL's fused LM head, and 4 rows of
    random tokens with left- and right-padding."""
    import copy

    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    fused = copy.deepcopy(model)
    add_fused_lm_head(fused, temperature=temperature, outputs=("log_probs", "entropy"))
    ids = torch.randint(3, model.config.vocab_size, (4, width))
    mask = torch.ones_like(ids)
    mask[0, :3], mask[1, -4:], mask[2, :1] = 0, 0, 0
    return model, fused, ids, mask


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_plain_head_scores_as_trls_chunked_kernel_with_the_same_gradients(tiny_checkpoint: Path,
                                                                              temperature: float) -> None:
    """`plain_logps` against TRL's own fused LM head, called as `GRPOTrainer` calls it: log-probs,
    entropies and the gradient of a loss on them, with left-padded prompts and right-padded games."""
    model, fused, ids, mask = model_and_fused(tiny_checkpoint, temperature, seed=0, width=13)
    keep = 9
    logps, ent = trainer.plain_logps(model, ids, mask, keep, temperature, entropy=True)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-keep] = -100
    out = fused(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    ref_logps, ref_ent = out.log_probs[:, -keep:], out.entropy[:, -keep:]
    assert torch.allclose(logps, ref_logps, atol=1e-5) and torch.allclose(ent, ref_ent, atol=1e-5)
    assert (logps[mask[:, -keep:] == 0] == 0).all() and (logps[mask[:, -keep:] == 1] < 0).all()
    weights = torch.randn(4, keep)
    ((logps * weights).sum() + ent.sum()).backward()
    ((ref_logps * weights).sum() + ref_ent.sum()).backward()
    for (name, a), b in zip(model.named_parameters(), fused.parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), name


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_head_at_the_models_tokens_scores_them_as_trls_kernel_with_the_same_gradients(
        tiny_checkpoint: Path, temperature: float) -> None:
    """`scored_logps` against TRL's fused LM head, called as `GRPOTrainer` calls it: at the scored
    positions (the model's tokens; the environment's and the padding are not) the same log-probs
    and entropies, 0 elsewhere, and the same gradient of a loss masked as TRL masks it."""
    model, fused, ids, mask = model_and_fused(tiny_checkpoint, temperature, seed=1, width=15)
    keep = 10
    scored = (torch.rand(4, keep) < 0.4).long()
    scored[3] = 0  # a row with nothing of the model's
    logps, ent = trainer.scored_logps(model, ids, mask, keep, scored, temperature, entropy=True)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-keep] = -100
    out = fused(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    loss_mask = (scored * mask[:, -keep:]).bool()
    ref_logps, ref_ent = out.log_probs[:, -keep:] * loss_mask, out.entropy[:, -keep:] * loss_mask
    assert loss_mask.any() and (logps[~loss_mask] == 0).all() and (ent[~loss_mask] == 0).all()
    assert torch.allclose(logps, ref_logps, atol=1e-5) and torch.allclose(ent, ref_ent, atol=1e-5)
    weights = torch.randn(4, keep)
    ((logps * weights).sum() + ent.sum()).backward()
    ((ref_logps * weights).sum() + ref_ent.sum()).backward()
    for (name, a), b in zip(model.named_parameters(), fused.parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), name


def test_trl_still_scores_tokens_through_the_method_game_trainer_overrides() -> None:
    import inspect

    from trl import GRPOTrainer

    params = list(inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters)
    assert params[:8] == ["self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
                          "compute_entropy", "compute_aux_loss"]
    assert "_get_per_token_logps_and_entropies(" in inspect.getsource(GRPOTrainer._compute_loss)
