"""What the game loop and its generation backends share: the rollout a game produces, a
reply, the sampling settings, the chat's token pieces, and the `Backend` protocol.

A backend writes one reply per playing game and turn: `kv_backend.KVCacheBackend`
(transformers, one batch KV cache, the conversation never re-encoded) or
`vllm_backend.VLLMBackend` (vLLM through TRL). The game loop is `rollout.play_games`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Protocol

from ttt_lab.env import parser, prompts
from ttt_lab.env.record import GameRecord


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
    bf16: bool = False
    """Forward passes under bf16 autocast (the training precision, `train.precision`)."""


class ChatTokens:
    """Token ids for the pieces of a ChatML-style conversation, without re-encoding history.

    The environment's tokens after a reply are rendered from the chat template (the template
    decides what an end of turn and a user turn look like); when the template writes a user turn
    the same whatever came before it (probed once, `_history_free`), they are memoised by the
    user message, and the prompts by their messages: a game then costs no template rendering and no
    tokenizing once its positions have been seen, and a new position renders a two-turn stand-in
    conversation, not the game's whole history."""

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.eos = tokenizer.eos_token_id
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos
        if tokenizer not in _MEMOS:
            _MEMOS[tokenizer] = _Memo() if self._history_free() else None
        self._memo: _Memo | None = _MEMOS[tokenizer]

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

    def start(self, messages: list[dict[str, str]]) -> tuple[list[int], str | None]:
        """A game's prompt ids, and its rendering for `after_reply`'s `before` (None when the
        memo serves the game: its later turns need no rendering)."""
        if self._memo is None:
            text = self.render(messages)
            return self.encode(text), text
        key = tuple((m["role"], m["content"]) for m in messages)
        ids = self._memo.prompts.get(key)
        if ids is None:
            ids = self._memo.put(self._memo.prompts, key, self.prompt(messages))
        return list(ids), None

    def after_reply(self, messages: list[dict[str, str]], ended_with_eos: bool,
                    before: str | None = None) -> tuple[list[int], str | None]:
        """The environment's tokens after the model's last reply (`messages[-2]`): end of turn,
        the next user message (`messages[-1]`) and the assistant header, read off the template;
        and the rendering of `messages`, or None when the tokens came from the memo. `before`,
        the rendering of `messages[:-2]` (what the previous call returned), spares rendering it
        again: the template runs once a turn."""
        if self._memo is None:
            tail, full = self._tail(messages, before)
            return self._tail_ids(tail, ended_with_eos), full
        key = (messages[-1]["content"], ended_with_eos)
        ids = self._memo.tails.get(key)
        if ids is None:
            tail, _ = self._tail([*_STAND_IN, messages[-1]])
            ids = self._memo.put(self._memo.tails, key, self._tail_ids(tail, ended_with_eos))
        return list(ids), None

    def _tail_ids(self, tail: str, ended_with_eos: bool) -> list[int]:
        ids = self.encode(tail)
        return ids[1:] if ended_with_eos and ids[:1] == [self.eos] else ids

    def _tail(self, messages: list[dict[str, str]], before: str | None = None) -> tuple[str, str]:
        before = self.render(messages[:-2]) if before is None else before
        full = self.render(messages)
        reply = messages[-2]["content"]
        if full.startswith(before + reply):
            return full[len(before) + len(reply) :], full
        # a template that rewrites earlier turns: everything after the reply's turn
        return self.tok.eos_token + "\n" + full[len(self.tok.apply_chat_template(
            messages[:-1], tokenize=False, add_generation_prompt=False)) :], full

    def _history_free(self) -> bool:
        """Whether the template writes the text after a reply and the next user turn the same
        whatever the conversation before it and the reply were."""
        system, user = {"role": "system", "content": "Rules."}, _STAND_IN[0]
        later = {"role": "user", "content": "\n\nBoard.\nYour turn."}
        histories = [[user], [system, user], [system, *_STAND_IN, later]]
        try:
            for content in ("Your turn.", "\n\n0 | X\nYour turn. "):
                tails = {self._tail([*h, {"role": "assistant", "content": r}, {"role": "user", "content": content}])[0]
                         for h in histories for r in ("<move>4</move>", "<think>x</think> 7")}
                if len(tails) != 1:
                    return False
        except Exception:  # a template that refuses a probe (no system role, ...): render every turn
            return False
        return True


@dataclass
class _Memo:
    """One tokenizer's memo: the environment's tokens by (user message, reply ended with the end
    of turn), the prompts' tokens by their messages."""

    tails: dict[tuple[str, bool], list[int]] = field(default_factory=dict)
    prompts: dict[tuple, list[int]] = field(default_factory=dict)

    @staticmethod
    def put(table: dict, key, ids: list[int]) -> list[int]:
        if len(table) >= MEMO_SIZE:
            table.clear()
        table[key] = ids
        return ids


_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per tokenizer: its `_Memo`, or None when its template is not history-free (render every turn)."""
MEMO_SIZE = 200_000
_STAND_IN = ({"role": "user", "content": "New game."}, {"role": "assistant", "content": "<move>4</move>"})
"""The history a memo miss renders the new user turn after (any history gives the same tail)."""


class Backend(Protocol):
    """A generation backend: one reply per playing game and turn."""

    def turn(self, chunks: list[list[int]], live: list[bool]) -> list[Reply]:
        """`chunks[r]`: the tokens game row `r` received since its last reply (its prompt at
        first); returns each live row's reply, `([], [])` for the others."""

    def keep(self, rows: list[int]) -> None:
        """Only rows `rows` (in that order) play on."""
