"""Players' move distributions, read off for exact evaluation (`ttt_lab.env.exact`).

Scripted players know theirs. A greedy model player's reply is deterministic: its distribution is
that one reply. A sampling model player's distribution over the well-formed replies
(`<move>N</move>`, one per cell) is scored by teacher forcing at its temperature — the
probability that sampling writes exactly that text and ends the turn; whatever mass is left goes
to other texts and is reported as unexplored, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ttt_lab.env.episode import Turn
from ttt_lab.game.solver import table
from ttt_lab.players.scripted import ScriptedPlayer

MOVE_REPLIES = tuple(f"<move>{c}</move>" for c in range(9))


class ScriptedDistribution:
    markov = True
    """Its replies depend on the board alone."""

    def __init__(self, player: ScriptedPlayer) -> None:
        self.player, self._index = player, table().index

    def distributions(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        policy, replies = self.player.policy, self.player._replies
        return [[(replies[c], q) for c, q in policy.distribution(self._index[t.board]).items()] for t in turns]

    def __repr__(self) -> str:
        return f"exact({self.player!r})"


class GreedyDistribution:
    """A deterministic player: its one reply, with probability 1."""

    def __init__(self, player) -> None:
        self.player = player

    def distributions(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        return [[(reply, 1.0)] for reply in self.player.respond(turns)]

    def __repr__(self) -> str:
        return f"exact({self.player!r})"


class ScoredDistribution:
    """Teacher-forced probabilities of `replies` (each followed by the end of turn) at `temperature`."""

    def __init__(self, model, tokenizer, *, temperature: float, max_new_tokens: int, batch_size: int = 64,
                 replies: Sequence[str] = MOVE_REPLIES) -> None:
        self.model, self.tokenizer, self.temperature = model, tokenizer, temperature
        self.batch_size = batch_size
        eos = tokenizer.eos_token_id
        encoded = [(r, [*tokenizer(r, add_special_tokens=False)["input_ids"], eos]) for r in replies]
        self.replies = [(r, ids) for r, ids in encoded if len(ids) <= max_new_tokens]

    def distributions(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        out: list[list[tuple[str, float]]] = []
        for i in range(0, len(turns), self.batch_size):
            out += self._score(turns[i : i + self.batch_size])
        return out

    def _score(self, turns: Sequence[Turn]) -> list[list[tuple[str, float]]]:
        texts = [self.tokenizer.apply_chat_template(t.messages, tokenize=False, add_generation_prompt=True)
                 for t in turns]
        prompts = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        probs = [[0.0] * len(self.replies) for _ in turns]
        by_length: dict[int, list[int]] = {}
        for j, (_, ids) in enumerate(self.replies):
            by_length.setdefault(len(ids), []).append(j)
        for length, js in by_length.items():
            seqs = [(i, j, prompts[i] + self.replies[j][1]) for i in range(len(turns)) for j in js]
            for (i, j), p in zip([(i, j) for i, j, _ in seqs], self._sequence_probs([s for *_, s in seqs], length),
                                 strict=True):
                probs[i][j] = p
        return [[(self.replies[j][0], p) for j, p in enumerate(row) if p > 0.0] for row in probs]

    def _sequence_probs(self, seqs: list[list[int]], length: int) -> list[float]:
        """P(last `length` tokens | the rest) for each sequence, left-padded into one batch."""
        import torch

        width = max(map(len, seqs))
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs])
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = self.model(input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                                position_ids=positions.to(self.model.device), logits_to_keep=length + 1).logits
        logp = torch.log_softmax(logits[:, :-1].float() / self.temperature, dim=-1)
        target = ids[:, -length:].to(logp.device)
        return logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).sum(-1).exp().tolist()

    def __repr__(self) -> str:
        return f"scored({self.model.__class__.__name__}, temperature={self.temperature:g})"
