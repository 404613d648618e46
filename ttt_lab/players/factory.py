"""The player a configuration names, built like an opponent from one registry: `player.kind` ->
the builder of that kind (each a `from_config(cfg)`); heavy backends are imported only when chosen."""

from __future__ import annotations

from collections.abc import Callable

from ttt_lab.config.schema import PLAYER_KINDS, Config
from ttt_lab.env.driver import Player
from ttt_lab.errors import InvalidSetting


def _scripted(cfg: Config) -> Player:
    from ttt_lab.players.scripted import from_config

    return from_config(cfg)


def _hf(cfg: Config) -> Player:
    from ttt_lab.players.hf import HFPlayer

    return HFPlayer.from_config(cfg)


def _openai(cfg: Config) -> Player:
    from ttt_lab.players.openai_player import OpenAIPlayer

    return OpenAIPlayer.from_config(cfg)


BUILDERS: dict[str, Callable[[Config], Player]] = {"scripted": _scripted, "hf": _hf, "openai": _openai}
"""One builder per kind the schema accepts (`config.schema.PLAYER_KINDS`, checked by tests)."""


def build_player(cfg: Config) -> Player:
    builder = BUILDERS.get(cfg.player.kind)
    if builder is None:
        raise InvalidSetting("player.kind", cfg.player.kind, " | ".join(PLAYER_KINDS))
    return builder(cfg)
