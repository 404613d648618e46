"""A player in the opponent's seat: `play` against a model, or a model against a model."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.env import prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.driver import Player
from ttt_lab.env.parser import feedback, parse
from ttt_lab.game.board import side_to_move


@dataclass
class _Turn:
    messages: list[dict[str, str]]
    board: str
    model_mark: str
    example: Example


@dataclass
class PlayerOpponent:
    """Asks `player` for a move on each position (shown as `shown`); after `retries` invalid
    replies it plays the first free cell, and counts that in `fallbacks`."""

    player: Player
    think: str = "optional"
    shown: str = "X"
    retries: int = 2
    fallbacks: int = field(default=0)

    def reply(self, board: str, seed: int) -> int:
        mark = side_to_move(board)
        display = prompts.display_board(board, mark, self.shown)
        messages = [
            {"role": "system", "content": prompts.system_prompt(self.shown, self.think)},
            {"role": "user", "content": prompts.turn_message(display, "Your turn in this game.")},
        ]
        example = Example(0, seed, 0.0, mark == "X", self.shown, -1)
        for _ in range(self.retries + 1):
            (text,) = self.player.respond([_Turn(messages, board, mark, example)])
            parsed = parse(text, board, self.think)
            if parsed.valid:
                return parsed.cell  # type: ignore[return-value]
            messages += [{"role": "assistant", "content": text},
                         {"role": "user", "content": prompts.turn_message(display, feedback(parsed))}]
        self.fallbacks += 1
        return board.index(".")
