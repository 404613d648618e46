"""The batch driver: plays many games between a player and the environment's opponent.

Each round asks the player for one reply per unfinished game in a single call, so a
language-model player can generate for the whole batch at once; evaluation and training
rollouts reuse this loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode, Turn, opponent_seed
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import Opponent


class Player(Protocol):
    def respond(self, turns: Sequence[Turn]) -> list[str]:
        """One reply per turn, in order."""


def play_games(
    player: Player,
    examples: Sequence[Example],
    env: EnvConfig,
    opponent: Opponent,
    *,
    max_batch: int | None = None,
    on_finished: Callable[[int], None] | None = None,
    opponent_seeding: str = "per_example",
    game_offset: int = 0,
) -> list[GameRecord]:
    """Play one game per example; records come back in the order of `examples`.

    `max_batch` bounds how many games are in flight at once (memory for model players);
    `on_finished(n)` is called after each round with the number of games just finished.
    With `opponent_seeding='per_game'` game i (counted from `game_offset`) gets its own
    opponent stream instead of the example's, so repeated examples meet different dice.
    """
    env.validate()
    records: list[GameRecord] = []
    chunk = max_batch or len(examples) or 1
    for start in range(0, len(examples), chunk):
        part = examples[start : start + chunk]
        seeds = [opponent_seed(ex, game_offset + start + i, opponent_seeding) for i, ex in enumerate(part)]
        episodes = [Episode(ex, env, opponent, s) for ex, s in zip(part, seeds, strict=True)]
        active = episodes
        while active:
            replies = player.respond(active)
            if len(replies) != len(active):
                raise ValueError(f"player {player!r} returned {len(replies)} replies for {len(active)} turns")
            for ep, reply in zip(active, replies, strict=True):
                ep.step(reply)
            still = [ep for ep in active if ep.outcome is None]
            if on_finished is not None:
                on_finished(len(active) - len(still))
            active = still
        records.extend(ep.record() for ep in episodes)
    return records
