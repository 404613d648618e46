"""One game in the terminal's hands (`ttt-lab play`): a human, or the configured player, against
the configured opponent or the player."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ttt_lab.api._config import ConfigLike, loaded
from ttt_lab.errors import InvalidSetting, TttLabError

if TYPE_CHECKING:
    from ttt_lab.env.driver import Player
    from ttt_lab.env.episode import Episode
    from ttt_lab.game.opponents import Opponent


@dataclass
class Game:
    episode: Episode
    player: Player | None
    """The configured player (None when a human plays against the opponent)."""

    @property
    def prompt(self) -> str:
        """What the side to move is shown now: the board, its status and the rules."""
        return str(self.episode.messages[-1]["content"])

    @property
    def done(self) -> bool:
        return bool(self.episode.done)

    @property
    def board(self) -> str:
        return str(self.episode.board)

    @property
    def outcome(self) -> str:
        """win | draw | loss (the mover's: the human's, or the watched player's) or why it ended."""
        return str(self.episode.outcome)

    @property
    def moves(self) -> int:
        return len(self.episode.moves)

    def refusal(self, text: str) -> str | None:
        """Why `text` is not a move here (a sentence), or None when it is one."""
        if not (len(text) == 1 and text in "012345678"):
            return f"'{text}' is not a cell: type one digit from 0 to 8."
        if self.episode.board[int(text)] != ".":
            return f"Cell {text} is taken; choose an empty cell."
        return None

    def move(self, cell: int) -> None:
        self.episode.step(f"<move>{cell}</move>")

    def player_reply(self) -> str:
        """The player's reply to the prompt (its move, as it wrote it)."""
        if self.player is None:
            raise TttLabError("this game has no player (a human plays the opponent): start it with watch=True or "
                              "against='player'.")
        (reply,) = self.player.respond([self.episode])
        return str(reply)

    def answer(self, reply: str) -> None:
        self.episode.step(reply)


def game(cfg: ConfigLike = None, *, watch: bool = False, first: str = "human", against: str = "opponent") -> Game:
    """A new game: who moves first (human, or the player with `watch` | opponent) and the other
    side (the config's opponent | the configured player)."""
    from ttt_lab.config.build import build_opponent
    from ttt_lab.env.dataset import Example
    from ttt_lab.env.episode import Episode

    if first not in ("human", "opponent"):
        raise InvalidSetting("--first", first, "human | opponent")
    if against not in ("opponent", "player"):
        raise InvalidSetting("--against", against, "opponent | player")
    cfg_ = loaded(cfg).cfg
    symbol = cfg_.dataset.model_symbol if cfg_.dataset.model_symbol in ("X", "O") else "X"
    player: Player | None = None
    opponent: Opponent
    if watch or against == "player":
        from ttt_lab.players.factory import build_player

        player = build_player(cfg_)
    if player is not None and against == "player":
        from ttt_lab.players.as_opponent import PlayerOpponent

        opponent = PlayerOpponent(player, think=cfg_.env.think, shown="O" if symbol == "X" else "X")
    else:
        opponent = build_opponent(cfg_.opponent)
    example = Example(0, cfg_.seed, cfg_.opponent.p_random, first == "human", symbol, -1)
    return Game(Episode(example, cfg_.env, opponent), player)
