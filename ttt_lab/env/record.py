"""The record of one finished game, serialisable to canonical JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ttt_lab.env.dataset import Example
from ttt_lab.env.rubric import Rewards


@dataclass(frozen=True, slots=True)
class GameRecord:
    example: Example
    messages: list[dict[str, str]]
    moves: list[tuple[str, int]]
    """(who, cell) in play order; who is 'model' or 'opponent'."""
    final_board: str
    model_mark: str
    """The model's mark in the core board (X moves first), not the symbol it was shown."""
    outcome: str
    model_turns: int
    messages_in_format: int
    invalid_moves: int
    invalid_kinds: dict[str, int]
    rewards: Rewards

    @property
    def format_rate(self) -> float:
        return self.messages_in_format / self.model_turns if self.model_turns else 0.0

    def to_dict(self) -> dict:
        return {
            "example": self.example.to_dict(),
            "outcome": self.outcome,
            "rewards": self.rewards.as_dict(),
            "model_turns": self.model_turns,
            "messages_in_format": self.messages_in_format,
            "invalid_moves": self.invalid_moves,
            "invalid_kinds": dict(sorted(self.invalid_kinds.items())),
            "model_mark": self.model_mark,
            "final_board": self.final_board,
            "moves": [{"by": by, "cell": cell} for by, cell in self.moves],
            "messages": self.messages,
        }

    def to_json(self) -> str:
        """One canonical JSON line (no trailing newline)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> GameRecord:
        return cls(
            example=Example(**d["example"]),
            messages=d["messages"],
            moves=[(m["by"], m["cell"]) for m in d["moves"]],
            final_board=d["final_board"],
            model_mark=d["model_mark"],
            outcome=d["outcome"],
            model_turns=d["model_turns"],
            messages_in_format=d["messages_in_format"],
            invalid_moves=d["invalid_moves"],
            invalid_kinds=d["invalid_kinds"],
            rewards=Rewards(**d["rewards"]),
        )
