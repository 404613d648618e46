"""Whole games played by a causal LM, batched across games, turn by turn.

`play_games` is the game loop: each turn one batch of replies from a generation backend
(`generation.Backend`), each reply played in its game, the environment's answer handed back
to the backend. Two backends: `kv_backend.KVCacheBackend` (transformers, one batch KV cache,
the conversation never re-encoded) and `vllm_backend.VLLMBackend` (vLLM through TRL, on a
GPU). Finished games leave the backend's batch (`Backend.keep`).

The result per game is what TRL's `rollout_func` needs: `prompt_ids` (system prompt and
first user turn), `completion_ids` (everything after, the model's replies and the
environment's messages), `env_mask` (1 = a token the model wrote, 0 = environment) and
the sampling `logprobs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ttt_lab.engine.generation import Backend, ChatTokens, Reply, Rollout, Sampling
from ttt_lab.engine.kv_backend import KVCacheBackend
from ttt_lab.engine.precision import autocast
from ttt_lab.engine.vllm_backend import VLLMBackend
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode, opponent_seed
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import Opponent
from ttt_lab.game.seeding import derive_seed


def play_rollouts(
    model,
    tokenizer,
    examples: Sequence[Example],
    env: EnvConfig,
    opponent: Opponent,
    sampling: Sampling,
    *,
    generator: torch.Generator | None = None,
    opponent_seeding: str = "per_example",
    game_offset: int = 0,
    vllm=None,
    game_ids: Sequence[int] | None = None,
    sampling_seed: int | None = None,
) -> list[Rollout]:
    """Play one whole game per example with `model` as the player; see the module docstring.
    With `vllm` (TRL's `VLLMGeneration` of the trainer) vLLM writes the replies instead.

    `game_ids` numbers the games (default: `game_offset` onwards) for the opponents' seeds;
    with `sampling_seed` too, each game samples from its own stream keyed on (seed, id), not
    from `generator`: the same game plays the same however the batch is cut."""
    chat = ChatTokens(tokenizer)
    ids = list(game_ids) if game_ids is not None else [game_offset + i for i in range(len(examples))]
    stream = None if sampling_seed is None else derive_seed(sampling_seed, SAMPLING_SALT)
    keys = None if stream is None else [derive_seed(stream, g) for g in ids]

    player, cast = (model, sampling.bf16) if vllm is not None else generation_model(model, sampling.bf16)

    def make_backend(prompts: list[list[int]]) -> Backend:
        if vllm is not None:
            return VLLMBackend(vllm, len(prompts), sampling.max_new_tokens)
        max_len = max(map(len, prompts)) + env.max_model_turns * (sampling.max_new_tokens + chat.max_env_tokens())
        return KVCacheBackend(player, chat, len(prompts), max_len, sampling, generator, keys)

    was_training = model.training
    player.eval()
    try:
        with torch.no_grad(), autocast(cast, str(next(model.parameters()).device)):
            return play_games(make_backend, chat, examples, env, opponent, opponent_seeding=opponent_seeding,
                              game_ids=ids)
    finally:
        model.train(was_training)


def generation_model(model, bf16: bool) -> tuple[torch.nn.Module, bool]:
    """The model that writes the replies, and whether it runs under bf16 autocast. On a CPU, a
    bf16 run generates with a bf16 copy of the fp32 master weights: autocast casts every weight
    again at every decoding step, which costs more than the step's matmuls for a small model
    (docs/benchmarks.md, "Kernels and precision"). The copy is made per call, so it always holds the current weights."""
    import copy

    weights = next(model.parameters())
    if not bf16 or weights.device.type != "cpu" or weights.dtype != torch.float32:
        return model, bf16
    return copy.deepcopy(model).to(torch.bfloat16), False


def play_games(make_backend: Callable[[list[list[int]]], Backend], chat: ChatTokens, examples: Sequence[Example],
               env: EnvConfig, opponent: Opponent, *, opponent_seeding: str = "per_example",
               game_offset: int = 0, game_ids: Sequence[int] | None = None) -> list[Rollout]:
    """The game loop: every turn, one batch of replies from the backend, played in each game."""
    ids = list(game_ids) if game_ids is not None else [game_offset + i for i in range(len(examples))]
    seeds = [opponent_seed(ex, g, opponent_seeding) for ex, g in zip(examples, ids, strict=True)]
    episodes = [Episode(ex, env, opponent, s) for ex, s in zip(examples, seeds, strict=True)]
    starts = [chat.start(ep.messages) for ep in episodes]
    rendered = [text for _, text in starts]
    rollouts = [Rollout(ids) for ids, _ in starts]
    chunks: list[list[int]] = [r.prompt_ids for r in rollouts]
    backend = make_backend(chunks)
    rows: list[int | None] = list(range(len(episodes)))
    while any(g is not None for g in rows):
        replies = backend.turn([chunks[g] if g is not None else [] for g in rows], [g is not None for g in rows])
        for r, g in enumerate(rows):
            if g is not None and not _continue(episodes[g], rollouts[g], replies[r], chunks, rendered, g, chat):
                rows[r] = None
        live = [r for r, g in enumerate(rows) if g is not None]
        if live and len(live) <= len(rows) * COMPACT_AT:
            backend.keep(live)
            rows = [rows[r] for r in live]
    for ep, ro in zip(episodes, rollouts, strict=True):
        ro.record = ep.record()
    return rollouts


SAMPLING_SALT = 0x5A3
COMPACT_AT = 0.75
"""Drop finished games from the backend once at most this share of its rows still plays:
compacting copies the KV cache, so it pays only when enough rows go at once."""


def _continue(ep: Episode, ro: Rollout, reply: Reply, chunks: list[list[int]], rendered: list[str | None], g: int,
              chat: ChatTokens) -> bool:
    """Record game `g`'s reply and play it; False when the game is over, else the
    environment's answer goes to `chunks[g]` (and the conversation's rendering to `rendered[g]`)."""
    ids, logprobs = reply
    ro.completion_ids += ids
    ro.env_mask += [1] * len(ids)
    ro.logprobs += logprobs
    ep.step(chat.tok.decode(ids, skip_special_tokens=True))
    if ep.done:
        return False
    env_ids, rendered[g] = chat.after_reply(ep.messages, bool(ids) and ids[-1] == chat.eos, rendered[g])
    ro.completion_ids += env_ids
    ro.env_mask += [0] * len(env_ids)
    ro.logprobs += [0.0] * len(env_ids)
    chunks[g] = env_ids
    return True
