"""One `env.think` setting for the environment and the scripted players: replies always in format."""

from __future__ import annotations

import pytest

from ttt_lab.config.load import load
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.evaluation.summary import summarise
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.factory import build_player


@pytest.mark.parametrize("think", ["off", "optional", "required"])
@pytest.mark.parametrize("player", ["minimax", "random"])
def test_scripted_players_answer_in_the_format_env_think_asks_for(player: str, think: str) -> None:
    cfg = load([f"player={player}", f"env.think={think}", "tracking.enabled=false"]).cfg
    records = play_games(build_player(cfg), make_dataset(cfg.dataset, 0)[:20], cfg.env, MinimaxOpponent())
    assert summarise("optimal", records).format_rate == 1.0
    said_think = any("<think>" in m["content"] for r in records for m in r.messages if m["role"] == "assistant")
    assert said_think == (think != "off")


@pytest.mark.parametrize("scoring", ["value", "fast", "exploit"])
def test_the_scripted_minimax_plays_only_the_moves_its_scoring_allows(scoring: str) -> None:
    from tests.game.replay import model_moves
    from ttt_lab.game.solver import candidates, table

    cfg = load(["player=minimax", f"player.scoring={scoring}", "tracking.enabled=false"]).cfg
    records = play_games(build_player(cfg), make_dataset(cfg.dataset, 0)[:60], cfg.env, MinimaxOpponent())
    t, allowed = table(), candidates(scoring)
    moves = [m for r in records for m in model_moves(r)]
    for state, cell in moves:
        assert cell in allowed[state], (scoring, t.boards[state], cell)
    assert len(moves) > 100


def test_an_unknown_player_scoring_is_one_error_naming_the_choices() -> None:
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"player\.scoring.*value \| fast \| exploit"):
        load(["player=minimax", "player.scoring=greedy", "tracking.enabled=false"])


def test_every_player_kind_has_one_builder_and_another_kind_is_refused() -> None:
    import dataclasses

    from ttt_lab.config.schema import PLAYER_KINDS
    from ttt_lab.errors import InvalidSetting
    from ttt_lab.players.factory import BUILDERS

    assert tuple(BUILDERS) == PLAYER_KINDS
    cfg = load(["player=random", "tracking.enabled=false"]).cfg
    assert repr(build_player(cfg)).startswith("ScriptedPlayer(RandomOpponent")
    wrong = dataclasses.replace(cfg, player=dataclasses.replace(cfg.player, kind="vllm"))
    with pytest.raises(InvalidSetting, match=r"player\.kind.*scripted \| hf \| openai"):
        build_player(wrong)
