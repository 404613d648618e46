"""The vLLM generation backend (GPU; `train.use_vllm=true`).

Each turn sends every playing game's whole token sequence so far to TRL's
`VLLMGeneration` (the trainer's colocated engine or vLLM server, with the trainer's
current weights: TRL syncs them before calling `rollout_func`); vLLM's prefix cache
spares re-computing the history. Replies are cut at `max_new_tokens` (the phase's
`generation_kwargs` already cap vLLM there), and their log-probabilities go back to TRL
for its importance-sampling correction.

On vLLM's CPU build, TRL's colocated weight sync (`load_weights` one parameter at a time)
fails once vLLM has packed its linear weights for oneDNN (a CPU with AVX512-BF16, bf16 or
fp32): the packed layers keep no `weight_loader`. `reload_in_place` syncs through vLLM's own
in-place reload instead, which restores the layers, loads every weight and packs them again.
"""

from __future__ import annotations

from ttt_lab.engine.generation import Reply


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


def reload_in_place(generation) -> None:
    """Push the trainer's weights to TRL's colocated vLLM engine with vLLM's layerwise reload
    (`reload_weights`, checkpoint format): valid whatever kernel format vLLM packed the
    weights into. `generation` is TRL's `VLLMGeneration`."""
    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=generation._iter_named_params(), is_checkpoint_format=True)
    _retie_head(runner.model)
    generation.llm.reset_prefix_cache()


def _retie_head(model) -> None:
    """With tied embeddings a checkpoint has no head weight, so the reload leaves the head with
    its old one (vLLM: "ParallelLMHead: Failed to load weights"): tie it to the new embedding
    and let the head pack it again."""
    head, inner = getattr(model, "lm_head", None), getattr(model, "model", None)
    if head is None or inner is None or not getattr(model.config, "tie_word_embeddings", False):
        return
    head.weight = inner.embed_tokens.weight
    head.quant_method.process_weights_after_loading(head)


def use_in_place_reload(trainer) -> bool:
    """On a CPU, replace TRL's colocated weight sync by `reload_in_place`; True when replaced.
    GPU engines keep TRL's own sync (its parameters are not repacked there)."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or generation.mode != "colocate" or not trainer.args.use_cpu:
        return False
    generation.sync_weights = lambda: reload_in_place(generation)
    return True
