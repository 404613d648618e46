"""One multi-turn game between a model (answering messages) and the environment's opponent.

The episode owns the conversation: system prompt, one user message per model turn, the
model's replies as assistant messages. An invalid reply gets a feedback message and the
model retries on the same board; every reply counts towards `max_model_turns` and every
reply is processed, the last one included. With `penalty.mode='forfeit'` the first
invalid reply loses the game.
"""

from __future__ import annotations

from typing import Protocol

from ttt_lab.env import prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.parser import feedback, parse
from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import DRAW, FORFEIT, LOSS, TURN_CAP, WIN, score
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import Opponent, TableOpponent
from ttt_lab.game.seeding import derive_seed
from ttt_lab.game.solver import table

PER_GAME_SALT = 0x9A3E_5EED
SEEDINGS = ("per_example", "per_game")


def opponent_seed(example: Example, game_number: int, seeding: str) -> int | None:
    """The opponent's seed for one game: None (the example's own seed) with per-example
    seeding; with per-game seeding a seed of its own for game `game_number` of a run."""
    if seeding == "per_game":
        return derive_seed(example.seed ^ PER_GAME_SALT, game_number)
    return None


class Turn(Protocol):
    """What a player sees when asked to move: the conversation, plus the game state for
    scripted players (which then need not parse the board back out of the text)."""

    messages: list[dict[str, str]]
    board: str
    model_mark: str
    example: Example


class Episode:
    __slots__ = (
        "_key",
        "_opp_seed",
        "_table",
        "board",
        "env",
        "example",
        "in_format",
        "invalid",
        "invalid_kinds",
        "messages",
        "model_mark",
        "model_turns",
        "moves",
        "opponent",
        "outcome",
        "shown",
        "state",
    )

    def __init__(self, example: Example, env: EnvConfig, opponent: Opponent, opponent_seed: int | None = None) -> None:
        """`opponent_seed` replaces the example's seed for the opponent's choices (the
        unseeded-opponent ablation gives every game its own)."""
        self.example, self.env, self.opponent = example, env, opponent
        self._opp_seed = example.seed if opponent_seed is None else opponent_seed
        self._table = table()
        self.state, self.board = 0, self._table.boards[0]
        self.model_mark = "X" if example.model_first else "O"
        self.shown = example.model_symbol
        self.moves: list[tuple[str, int]] = []
        self.model_turns = self.in_format = self.invalid = 0
        self.invalid_kinds: dict[str, int] = {}
        self.outcome: str | None = None
        self._key = opponent.key(self._opp_seed) if isinstance(opponent, TableOpponent) else None
        first = None if example.model_first else self._opponent_move()
        self.messages = [
            {"role": "system", "content": prompts.system_prompt(self.shown, env.think)},
            self._user(prompts.opening_status(self.shown, first)),
        ]

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def _user(self, status: str) -> dict[str, str]:
        display = prompts.display_board(self.board, self.model_mark, self.shown)
        return {"role": "user", "content": prompts.turn_message(display, status)}

    def _apply(self, cell: int, by: str) -> None:
        self.state = self._table.children[self.state][cell]
        self.board = self._table.boards[self.state]
        self.moves.append((by, cell))
        if self._table.terminal[self.state]:
            w = self._table.winner[self.state]
            self.outcome = DRAW if w is None else WIN if w == self.model_mark else LOSS

    def _opponent_move(self) -> int:
        if self._key is not None:
            assert isinstance(self.opponent, TableOpponent)  # _key is only set for table opponents
            cell = self.opponent.reply_state(self.state, self._key, self.example.p_random)
        else:
            cell = self.opponent.reply(self.board, self._opp_seed)
            if cell not in self._table.legal[self.state]:
                raise ValueError(f"opponent {self.opponent!r} played illegal cell {cell!r} on {self.board!r}")
        self._apply(cell, "opponent")
        return cell

    def step(self, reply: str) -> None:
        """Process one model reply and, if the game goes on, append the next user message."""
        if self.outcome is not None:
            raise RuntimeError("the game is over; no more replies are accepted")
        self.messages.append({"role": "assistant", "content": reply})
        self.model_turns += 1
        p = parse(reply, self.board, self.env.think)
        self.in_format += p.format_ok
        if not p.valid:
            self.invalid += 1
            self.invalid_kinds[p.kind] = self.invalid_kinds.get(p.kind, 0) + 1
            if self.env.penalty.mode == "forfeit":
                self.outcome = FORFEIT
            elif self.model_turns >= self.env.max_model_turns:
                self.outcome = TURN_CAP
            else:
                self.messages.append(self._user(feedback(p)))
            return
        assert p.cell is not None  # a valid parse always carries its cell
        self._apply(p.cell, "model")
        if self.outcome is not None:
            return
        cell = self._opponent_move()
        if self.outcome is None:
            if self.model_turns >= self.env.max_model_turns:
                self.outcome = TURN_CAP
            else:
                self.messages.append(self._user(prompts.opponent_status(self.shown, cell)))

    def record(self) -> GameRecord:
        if self.outcome is None:
            raise RuntimeError("the game is not over yet")
        rewards = score(self.outcome, self.model_turns, self.in_format, self.invalid, self.env)
        return GameRecord(
            example=self.example,
            messages=self.messages,
            moves=self.moves,
            final_board=self.board,
            model_mark=self.model_mark,
            outcome=self.outcome,
            model_turns=self.model_turns,
            messages_in_format=self.in_format,
            invalid_moves=self.invalid,
            invalid_kinds=self.invalid_kinds,
            rewards=rewards,
        )
