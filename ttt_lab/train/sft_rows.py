"""What the lean SFT loop's passes share: an encoded example (its tokens and where the loss is),
and the two halves of a causal LM they run (`sft_lean`'s padded rows, `sft_trie`'s tries,
`sft_context`'s frozen contexts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

IGNORE = -100


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    labels: list[int]
    """The token itself where it carries loss, else -100 (aligned with `ids`, not shifted)."""
    context: int = 0
    """Where the exchange of the first reply that carries loss begins (the end of the assistant
    turn before it; 0 when none): the tokens before it are that reply's context."""

    @property
    def items(self) -> int:
        """Tokens that carry loss (the first token never does: nothing predicts it)."""
        return sum(x != IGNORE for x in self.labels[1:])


def parts(model):
    """The decoder (hidden states) and the LM head of a causal LM (or a PEFT wrapper of one)."""
    return model.get_decoder(), model.get_output_embeddings()


def wide(logits: torch.Tensor) -> torch.Tensor:
    """Logits in at least fp32 (bf16 autocast's are upcast for the loss, as transformers does)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the token prefix `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


__all__ = ["IGNORE", "Encoded", "common_prefix", "parts", "wide"]
