"""The batched game engine: a local transformers model plays whole games against the
environment's opponents, many at once, its KV cache kept across turns (or through vLLM). The
training's rollouts and the `hf` player's evaluation both play through it."""
