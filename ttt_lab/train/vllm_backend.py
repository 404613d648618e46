"""The vLLM generation backend (GPU; `train.use_vllm=true`).

Each turn sends every playing game's whole token sequence so far to TRL's
`VLLMGeneration` (the trainer's colocated engine or vLLM server, with the trainer's
current weights: TRL syncs them before calling `rollout_func`); vLLM's prefix cache
spares re-computing the history. Replies are cut at `max_new_tokens` (the phase's
`generation_kwargs` already cap vLLM there), and their log-probabilities go back to TRL
for its importance-sampling correction.
"""

from __future__ import annotations

from ttt_lab.train.generation import Reply


class VLLMBackend:
    """`generation.Backend` on TRL's `VLLMGeneration` (anything with its `generate`)."""

    def __init__(self, generation, n: int, max_new_tokens: int) -> None:
        self.generation, self.max_new = generation, max_new_tokens
        self.seqs: list[list[int]] = [[] for _ in range(n)]

    def turn(self, chunks: list[list[int]], live: list[bool]) -> list[Reply]:
        rows = [r for r in range(len(chunks)) if live[r]]
        for r in rows:
            self.seqs[r] += chunks[r]
        _, completions, logprobs, _ = self.generation.generate(
            prompts=[self.seqs[r] for r in rows], images=None, num_generations=1)
        replies: list[Reply] = [([], []) for _ in chunks]
        for i, r in enumerate(rows):
            ids = list(completions[i][: self.max_new])
            lps = [_first(lp) for lp in logprobs[i][: len(ids)]] if logprobs is not None else [0.0] * len(ids)
            replies[r] = (ids, lps)
            self.seqs[r] += ids
        return replies

    def keep(self, rows: list[int]) -> None:
        self.seqs = [self.seqs[r] for r in rows]


def _first(logprob) -> float:
    """TRL gives each token's log-probabilities as a list (sampled token first); NaN when vLLM had none."""
    value = logprob[0] if isinstance(logprob, list | tuple) else logprob
    return float("nan") if value is None else float(value)
