"""Scripted players that answer in the model's format: baselines, teachers and test doubles.

They read the position from the turn's game state (exactly what the messages show) and
choose with the same per-turn seeding as opponents, on a stream of their own, so a
scripted game is a pure function of the example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ttt_lab.env.episode import Turn
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent, TableOpponent
from ttt_lab.game.seeding import PLAYER_STREAM
from ttt_lab.game.solver import table

if TYPE_CHECKING:
    from ttt_lab.config.schema import Config

_REPLIES = {
    "think": tuple(f"<think>Cell {c} is my best option.</think>\n<move>{c}</move>" for c in range(9)),
    "plain": tuple(f"<move>{c}</move>" for c in range(9)),
}


class ScriptedPlayer:
    """Plays `policy`'s move on every turn, written as `<move>N</move>` (after a short
    `<think>` when `think=True`)."""

    def __init__(self, policy: TableOpponent, think: bool = True) -> None:
        self.policy = policy
        self._replies = _REPLIES["think" if think else "plain"]
        self._index = table().index
        self._keys: dict[int, int] = {}

    def respond(self, turns: Sequence[Turn]) -> list[str]:
        out = []
        index, keys, policy = self._index, self._keys, self.policy
        for turn in turns:
            seed = turn.example.seed
            key = keys.get(seed)
            if key is None:
                key = keys[seed] = policy.key(seed)
            cell = policy.reply_state(index[turn.board], key, policy.p_random)
            out.append(self._replies[cell])
        return out

    def reply_text(self, cell: int) -> str:
        """The reply this player writes to play `cell`."""
        return self._replies[cell]

    def __repr__(self) -> str:
        return f"ScriptedPlayer({self.policy!r})"


def random_player(think: bool = True) -> ScriptedPlayer:
    return ScriptedPlayer(RandomOpponent(stream=PLAYER_STREAM), think)


def minimax_player(tie_break: str = "random", p_random: float = 0.0, think: bool = True,
                   scoring: str = "value") -> ScriptedPlayer:
    opponent = MinimaxOpponent(tie_break=tie_break, scoring=scoring, p_random=p_random, stream=PLAYER_STREAM)
    return ScriptedPlayer(opponent, think)


def from_config(cfg: Config) -> ScriptedPlayer:
    """The scripted player `player.policy` names (minimax | random); it thinks aloud when `env.think` is on."""
    p, think = cfg.player, cfg.env.think != "off"
    if p.policy == "random":
        return random_player(think=think)
    return minimax_player(tie_break=p.tie_break, p_random=p.p_random, think=think, scoring=p.scoring)
