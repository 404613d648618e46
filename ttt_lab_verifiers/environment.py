"""ttt-lab's tic-tac-toe environment as a verifiers (v1) environment.

The taskset turns ttt-lab's config (the same overrides as the CLI: `env.penalty.mode=forfeit`,
`env.max_model_turns=6`, `dataset.p_min=0.3`, `opponent.tie_break=first`, ...) into one task per
game; the env plays each game as ttt-lab's own `Episode`: the task's prompt is the episode's opening,
each reply of the player is one `Episode.step`, the episode's next user message is the next turn,
and the game's rubric is recorded as named rewards with ttt-lab's weights (their weighted sum is
ttt-lab's `total`).
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf
from pydantic import Field, field_validator
from verifiers.v1.types import AssistantMessage, content_text

from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode
from ttt_lab.env.rubric import DRAW, FORFEIT, LOSS, TURN_CAP, WIN
from ttt_lab.errors import TttLabError
from ttt_lab_verifiers.games import Game, Opponents, games, settings

OUTCOMES = (WIN, DRAW, LOSS, TURN_CAP, FORFEIT)


class TttLabTasksetConfig(vf.TasksetConfig):
    overrides: list[str] = Field(default_factory=list)
    """ttt-lab config overrides, as on its CLI (`--env.taskset.overrides env.think=off experiment=tiny_cpu`)."""
    split: Literal["eval", "train"] = "eval"
    """eval: the games `ttt-lab eval` plays (eval.suite x eval.games); train: the configured
    dataset (dataset.*, seed) against the configured opponent (opponent.*)."""

    @field_validator("overrides")
    @classmethod
    def _compose(cls, value: list[str]) -> list[str]:
        try:
            settings(tuple(value))
        except TttLabError as e:
            raise ValueError(f"ttt-lab could not use --env.taskset.overrides {value}: {e}") from None
        return value


class TttLabData(vf.TaskData):
    split: str
    entry: str
    """The opponent: an eval suite entry's name, or `train` (the configured opponent)."""
    entry_index: int
    example: dict
    """ttt-lab's `Example` (seed, random-move probability, who starts, shown symbol, stratum)."""


class TttLabTask(vf.Task[TttLabData, vf.State, vf.TaskConfig]):
    pass


class TttLabTaskset(vf.Taskset[TttLabTask, TttLabTasksetConfig]):
    def __init__(self, config: TttLabTasksetConfig) -> None:
        super().__init__(config)
        self.loaded = settings(tuple(config.overrides))
        self.opponents = Opponents(self.loaded, config.split)

    def load(self):
        for game in games(self.loaded, self.config.split):
            opening = self.opponents.episode(game).messages
            yield TttLabTask(TttLabData(name=game.name, system_prompt=opening[0]["content"],
                                        prompt=opening[1]["content"], split=game.split, entry=game.entry,
                                        entry_index=game.entry_index, example=game.example.to_dict()),
                             self.config.task)


class TttLabEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig(),
                                            network_notice=False)
    """The model under evaluation: a plain chat loop (no tools), run locally; the game itself caps
    its turns (env.max_model_turns)."""


def _reply(segment) -> str:
    """The player's reply as it was sampled (`Segment.last_reply` strips it; the parser sees it whole)."""
    for message in reversed(segment.messages):
        if isinstance(message, AssistantMessage):
            return content_text(message.content) if message.content is not None else ""
    return segment.last_reply


def _record(trace, episode: Episode, game: Game, weights) -> None:
    record = episode.record()
    r = record.rewards
    trace.record_reward("outcome", r.outcome, weights.outcome_weight)
    trace.record_reward("format", r.format, weights.format_weight)
    trace.record_reward("invalid", r.invalid, weights.invalid_weight)
    trace.record_metrics({name: float(record.outcome == name) for name in OUTCOMES})
    trace.record_metrics({"invalid_moves": record.invalid_moves, "model_turns": record.model_turns,
                          "format_rate": record.format_rate, "total": r.total})
    trace.info["ttt_lab"] = {"opponent": game.entry, **{k: v for k, v in record.to_dict().items() if k != "messages"}}


class TttLabEnv(vf.Env[TttLabEnvConfig]):
    async def run(self, task, agents) -> None:
        data = task.data
        game = Game(data.split, data.entry, data.entry_index, Example(**data.example))
        taskset: TttLabTaskset = self.taskset
        episode = taskset.opponents.episode(game)
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                episode.step(_reply(segment))
                if episode.done:
                    break
                segment = await interaction.turn(episode.messages[-1]["content"])
        if not episode.done:
            why = interaction.trace.stop_condition or "the player stopped answering"
            raise RuntimeError(
                f"game {game.name} stopped after {episode.model_turns} replies, before it ended ({why}); its rewards "
                "are not recorded. A cap on the player (--env.player.max-turns) must allow env.max_model_turns replies."
            )
        _record(interaction.trace, episode, game, taskset.loaded.cfg.env.reward)


def load_environment(overrides: list[str] | None = None, split: str = "eval", **config) -> TttLabEnv:
    """The environment built in Python rather than from `vf-eval` flags: `overrides` are ttt-lab's
    (as on its CLI), `config` any other field of `TttLabEnvConfig` (e.g. `player={...}`)."""
    taskset = {"id": "ttt-lab-verifiers", "overrides": list(overrides or []), "split": split}
    return TttLabEnv(TttLabEnvConfig(taskset=taskset, **config))
