"""`ttt-lab play`: a human against an opponent or a player, or `--watch` a game."""

from __future__ import annotations

import time

from rich.console import Console
from rich.panel import Panel

from ttt_lab.config.build import build_opponent
from ttt_lab.config.load import load
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.errors import InvalidSetting

RESULT_LINES = {WIN: "You win!", DRAW: "Draw.", "loss": "You lose."}


def _read_move(episode: Episode, console: Console) -> int:
    while True:
        text = console.input("[bold]Your move (0-8, q to quit):[/] ").strip()
        if text.lower() in ("q", "quit", "exit"):
            raise KeyboardInterrupt
        if not (len(text) == 1 and text in "012345678"):
            console.print(f"'{text}' is not a cell: type one digit from 0 to 8.", highlight=False)
        elif episode.board[int(text)] != ".":
            console.print(f"Cell {text} is taken; choose an empty cell.", highlight=False)
        else:
            return int(text)


def play_game(overrides: list[str], *, watch: bool, first: str, against: str, delay: float,
              console: Console) -> None:
    if first not in ("human", "opponent"):
        raise InvalidSetting("--first", first, "human | opponent")
    if against not in ("opponent", "player"):
        raise InvalidSetting("--against", against, "opponent | player")
    cfg = load(overrides).cfg
    symbol = cfg.dataset.model_symbol if cfg.dataset.model_symbol in ("X", "O") else "X"
    player = None
    if watch or against == "player":
        from ttt_lab.players.factory import build_player

        player = build_player(cfg)
    if against == "player":
        from ttt_lab.players.as_opponent import PlayerOpponent

        opponent = PlayerOpponent(player, think=cfg.env.think, shown="O" if symbol == "X" else "X")
    else:
        opponent = build_opponent(cfg.opponent)
    example = Example(0, cfg.seed, cfg.opponent.p_random, first == "human", symbol, -1)
    ep = Episode(example, cfg.env, opponent)
    while not ep.done:
        console.print(Panel(ep.messages[-1]["content"], expand=False))
        if watch:
            (reply,) = player.respond([ep])
            console.print(f"[bold]player:[/] {reply}", highlight=False)
            time.sleep(delay)
        else:
            reply = f"<move>{_read_move(ep, console)}</move>"
        ep.step(reply)
    grid = "\n".join(" | ".join(ep.board[r : r + 3]) for r in (0, 3, 6))
    console.print(Panel(grid.replace(".", " "), title="final board (core symbols: X moved first)", expand=False))
    who = "The player" if watch else "You"
    line = RESULT_LINES.get(ep.outcome, f"Game over: {ep.outcome}.")
    console.print(f"Result: {line.replace('You', who)} ({len(ep.moves)} moves)", highlight=False)
