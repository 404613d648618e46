"""A policy that learned one line by heart: optimal against the first-tie-break minimax,
the lowest free cell everywhere else (the published failure, on purpose)."""

from __future__ import annotations

from collections.abc import Sequence

from ttt_lab.env.dataset import Example
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent, TableOpponent
from ttt_lab.game.solver import table
from ttt_lab.players.scripted import minimax_player


def _book() -> dict[str, int]:
    t = table()
    book: dict[str, int] = {}
    examples = [Example(i, 0, 0.0, i == 0, "X", 0) for i in range(2)]
    for record in play_games(minimax_player("first", think=False), examples, EnvConfig(think="off"),
                             MinimaxOpponent("first")):
        s = 0
        for by, cell in record.moves:
            if by == "model":
                book[t.boards[s]] = cell
            s = t.children[s][cell]
    return book


class MemorisingPlayer:
    def __init__(self, think: bool = False) -> None:
        self.book = _book()
        self.think = think

    def respond(self, turns: Sequence) -> list[str]:
        out = []
        for turn in turns:
            cell = self.book.get(turn.board, turn.board.index("."))
            move = f"<move>{cell}</move>"
            out.append(f"<think>I know this one.</think>\n{move}" if self.think else move)
        return out

    def __repr__(self) -> str:
        return "MemorisingPlayer()"


class BookOpponent(TableOpponent):
    """The memoriser's rule as a table policy: its book's move, else the lowest free cell. As a
    `ScriptedPlayer` its move distribution can be read off, so the exact panel audits it too."""

    def __init__(self) -> None:
        super().__init__()
        book = _book()
        t = table()
        self._cells = {s: (book.get(b, b.index(".")),) for s, b in enumerate(t.boards) if not t.terminal[s]}

    def choose(self, state: int, h: int) -> int:
        return self._cells[state][0]

    def choices(self, state: int) -> tuple[tuple[int, ...], bool]:
        return self._cells[state], False

    def __repr__(self) -> str:
        return "BookOpponent()"
