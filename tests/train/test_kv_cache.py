import torch

from ttt_lab.train.kv_cache import GrowingCache


def test_growing_cache_gives_the_logits_of_a_full_forward_pass_and_keeps_rows(tiny_checkpoint) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint).eval()
    torch.manual_seed(0)
    ids = torch.randint(5, model.config.vocab_size, (3, 12))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        cache = GrowingCache(model.config.num_hidden_layers, capacity=12)
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
