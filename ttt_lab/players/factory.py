"""The player a configuration names; heavy backends are imported only when chosen."""

from __future__ import annotations

from ttt_lab.config.schema import Config
from ttt_lab.env.driver import Player
from ttt_lab.players.scripted import minimax_player, random_player


def build_player(cfg: Config) -> Player:
    p = cfg.player
    if p.kind == "scripted":
        think = cfg.env.think != "off"
        if p.policy == "random":
            return random_player(think=think)
        return minimax_player(tie_break=p.tie_break, p_random=p.p_random, think=think, scoring=p.scoring)
    if p.kind == "hf":
        from ttt_lab.players.hf import HFPlayer

        return HFPlayer.from_config(cfg)
    from ttt_lab.players.openai_player import OpenAIPlayer

    return OpenAIPlayer.from_config(cfg)
