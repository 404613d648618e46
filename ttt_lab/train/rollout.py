"""Whole games played by a causal LM, batched across games, turn by turn.

`play_games` is the game loop: each turn one batch of replies from a generation backend
(`Turns`), each reply played in its game, the environment's answer handed back to the
backend. Two backends: `cached_turns.CachedTurns` (transformers, one batch KV cache, the
conversation never re-encoded) and `vllm_turns.VLLMTurns` (vLLM through TRL, on a GPU).
Finished games leave the backend's batch (`Turns.keep`).

The result per game is what TRL's `rollout_func` needs: `prompt_ids` (system prompt and
first user turn), `completion_ids` (everything after, the model's replies and the
environment's messages), `env_mask` (1 = a token the model wrote, 0 = environment) and
the sampling `logprobs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from ttt_lab.env import parser, prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode, opponent_seed
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import Opponent


@dataclass
class Rollout:
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    """Per completion token: its log-probability under the sampling distribution (the model's
    logits over the temperature; temperature 1 when greedy), 0.0 for the environment's tokens."""
    record: GameRecord | None = None


Reply = tuple[list[int], list[float]]
"""A reply's tokens and their sampling log-probabilities."""


@dataclass
class Sampling:
    temperature: float = 1.0
    """0 means greedy."""
    max_new_tokens: int = 32


class ChatTokens:
    """Token ids for the pieces of a ChatML-style conversation, without re-encoding history."""

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.eos = tokenizer.eos_token_id
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos

    def encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def max_env_tokens(self) -> int:
        """An upper bound on the environment's tokens between two replies."""
        longest = max((parser.feedback(parser.Parsed(k, 0, False)) for k in parser.INVALID_KINDS), key=len)
        status = f"{longest} {prompts.opponent_status('X', 8)}"
        messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},
                    {"role": "user", "content": prompts.turn_message(".........", status)}]
        return len(self.after_reply(messages, ended_with_eos=False)[0]) + 16

    def render(self, messages: list[dict[str, str]]) -> str:
        """The conversation as the template writes it, ready for the assistant's turn."""
        return self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def prompt(self, messages: list[dict[str, str]]) -> list[int]:
        return self.encode(self.render(messages))

    def after_reply(self, messages: list[dict[str, str]], ended_with_eos: bool,
                    before: str | None = None) -> tuple[list[int], str]:
        """The environment's tokens after the model's last reply (`messages[-2]`): end of turn,
        the next user message (`messages[-1]`) and the assistant header, read off the template;
        and the rendering of `messages`. `before`, the rendering of `messages[:-2]` (what the
        previous call returned), spares rendering it again: the template runs once a turn."""
        before = self.render(messages[:-2]) if before is None else before
        full = self.render(messages)
        reply = messages[-2]["content"]
        if full.startswith(before + reply):
            tail = full[len(before) + len(reply) :]
        else:  # a template that rewrites earlier turns: fall back to everything after the reply's turn
            tail = self.tok.eos_token + "\n" + full[len(self.tok.apply_chat_template(
                messages[:-1], tokenize=False, add_generation_prompt=False)) :]
        ids = self.encode(tail)
        if ended_with_eos and ids[:1] == [self.eos]:
            ids = ids[1:]
        return ids, full


class Turns(Protocol):
    """A generation backend: one reply per playing game and turn."""

    def turn(self, chunks: list[list[int]], live: list[bool]) -> list[Reply]:
        """`chunks[r]`: the tokens game row `r` received since its last reply (its prompt at
        first); returns each live row's reply, `([], [])` for the others."""

    def keep(self, rows: list[int]) -> None:
        """Only rows `rows` (in that order) play on."""


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
) -> list[Rollout]:
    """Play one whole game per example with `model` as the player; see the module docstring.
    With `vllm` (TRL's `VLLMGeneration` of the trainer) vLLM writes the replies instead."""
    from ttt_lab.train.cached_turns import CachedTurns
    from ttt_lab.train.vllm_turns import VLLMTurns

    chat = ChatTokens(tokenizer)

    def engine(prompts: list[list[int]]) -> Turns:
        if vllm is not None:
            return VLLMTurns(vllm, len(prompts), sampling.max_new_tokens)
        max_len = max(map(len, prompts)) + env.max_model_turns * (sampling.max_new_tokens + chat.max_env_tokens())
        return CachedTurns(model, chat, len(prompts), max_len, sampling, generator)

    was_training = model.training
    model.eval()
    try:
        return play_games(engine, chat, examples, env, opponent, opponent_seeding=opponent_seeding,
                          game_offset=game_offset)
    finally:
        model.train(was_training)


def play_games(engine: Callable[[list[list[int]]], Turns], chat: ChatTokens, examples: Sequence[Example],
               env: EnvConfig, opponent: Opponent, *, opponent_seeding: str = "per_example",
               game_offset: int = 0) -> list[Rollout]:
    """The game loop: every turn, one batch of replies from the engine, played in each game."""
    seeds = [opponent_seed(ex, game_offset + i, opponent_seeding) for i, ex in enumerate(examples)]
    episodes = [Episode(ex, env, opponent, s) for ex, s in zip(examples, seeds, strict=True)]
    rendered = [chat.render(ep.messages) for ep in episodes]
    rollouts = [Rollout(chat.encode(text)) for text in rendered]
    chunks: list[list[int]] = [r.prompt_ids for r in rollouts]
    turns = engine(chunks)
    rows: list[int | None] = list(range(len(episodes)))
    while any(g is not None for g in rows):
        replies = turns.turn([chunks[g] if g is not None else [] for g in rows], [g is not None for g in rows])
        for r, g in enumerate(rows):
            if g is not None and not _continue(episodes[g], rollouts[g], replies[r], chunks, rendered, g, chat):
                rows[r] = None
        live = [r for r, g in enumerate(rows) if g is not None]
        if live and len(live) <= len(rows) * COMPACT_AT:
            turns.keep(live)
            rows = [rows[r] for r in live]
    for ep, ro in zip(episodes, rollouts, strict=True):
        ro.record = ep.record()
    return rollouts


COMPACT_AT = 0.75
"""Drop finished games from the engine once at most this share of its rows still plays:
compacting copies the KV cache, so it pays only when enough rows go at once."""


def _continue(ep: Episode, ro: Rollout, reply: Reply, chunks: list[list[int]], rendered: list[str], g: int,
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
