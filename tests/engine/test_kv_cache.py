import pytest
import torch

from ttt_lab.engine.kv_cache import GrowingCache

pytestmark = pytest.mark.numerics


def _games(tiny_checkpoint, seed: int, rows: int, length: int):
    """The tiny model, random token rows, their logits in one full pass, and an empty cache."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint).eval()
    torch.manual_seed(seed)
    ids = torch.randint(5, model.config.vocab_size, (rows, length))
    with torch.no_grad():
        full = model(input_ids=ids).logits
    return model, ids, full, GrowingCache(model.config.num_hidden_layers, capacity=length)


def test_growing_cache_gives_the_logits_of_a_full_forward_pass_and_keeps_rows(tiny_checkpoint) -> None:
    model, ids, full, cache = _games(tiny_checkpoint, 0, 3, 12)
    with torch.no_grad():
        first = model(input_ids=ids[:, :7], cache=cache, use_cache=True).logits
        assert cache.get_seq_length() == 7
        for layer in cache.layers:  # how the rollout engine drops finished games
            layer.reorder_cache(torch.tensor([2, 0]))
        rest = model(input_ids=ids[[2, 0], 7:], cache=cache, use_cache=True).logits
    torch.testing.assert_close(first, full[:, :7], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rest, full[[2, 0], 7:], atol=1e-4, rtol=1e-4)


def test_growing_cache_refuses_to_overflow(tiny_checkpoint) -> None:
    import pytest
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint).eval()
    cache = GrowingCache(model.config.num_hidden_layers, capacity=4)
    with torch.no_grad(), pytest.raises(RuntimeError, match="cache of 4 tokens"):
        model(input_ids=torch.ones((1, 5), dtype=torch.long), cache=cache, use_cache=True)


def test_a_pass_of_some_rows_writes_theirs_alone_and_the_others_stay_zero(tiny_checkpoint) -> None:
    """`only(rows)`: the rows' next tokens get the logits of a full forward pass; the other
    rows' skipped position holds zeros (masked later, but multiplied: never NaN)."""
    model, ids, full, cache = _games(tiny_checkpoint, 1, 4, 9)
    with torch.no_grad():
        model(input_ids=ids[:, :8], cache=cache, use_cache=True)
        rows = torch.tensor([3, 1])
        with cache.only(rows):
            part = model(input_ids=ids[rows, 8:], cache=cache, use_cache=True).logits
    torch.testing.assert_close(part[:, -1], full[rows, -1], atol=1e-4, rtol=1e-4)
    for layer in cache.layers:
        assert layer.rows is None and layer.keys.shape[0] == 4 and layer.get_seq_length() == 9
        assert torch.count_nonzero(layer.keys[[0, 2], :, 8]) == 0 and torch.count_nonzero(layer.keys[[1, 3], :, 8]) > 0
