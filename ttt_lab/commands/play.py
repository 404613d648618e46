"""`ttt-lab play`: a human against an opponent or a player, or `--watch` a game
(`ttt_lab.api.game` sets it up; this draws the board and reads the moves)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.panel import Panel

from ttt_lab import api

RESULT_LINES = {"win": "You win!", "draw": "Draw.", "loss": "You lose."}


def _read_move(game: api.Game, console: Console) -> int:
    while True:
        text = console.input("[bold]Your move (0-8, q to quit):[/] ").strip()
        if text.lower() in ("q", "quit", "exit"):
            raise KeyboardInterrupt
        refusal = game.refusal(text)
        if refusal is None:
            return int(text)
        console.print(refusal, highlight=False)


def play_game(overrides: list[str], *, watch: bool, first: str, against: str, delay: float,
              console: Console) -> None:
    game = api.game(overrides, watch=watch, first=first, against=against)
    while not game.done:
        console.print(Panel(game.prompt, expand=False))
        if watch:
            reply = game.player_reply()
            console.print(f"[bold]player:[/] {reply}", highlight=False)
            time.sleep(delay)
            game.answer(reply)
        else:
            game.move(_read_move(game, console))
    board = game.board
    grid = "\n".join(" | ".join(board[r : r + 3]) for r in (0, 3, 6))
    console.print(Panel(grid.replace(".", " "), title="final board (core symbols: X moved first)", expand=False))
    who = "The player" if watch else "You"
    line = RESULT_LINES.get(game.outcome, f"Game over: {game.outcome}.")
    console.print(f"Result: {line.replace('You', who)} ({game.moves} moves)", highlight=False)
