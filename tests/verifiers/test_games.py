"""The verifiers-free half of ttt-lab's verifiers environment (runs in `make test`): its games are
the ones ttt-lab plays, against the same opponents with the same dice."""

from __future__ import annotations

import pytest

from ttt_lab.config.build import build_opponent
from ttt_lab.config.load import load
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.evaluation.suite import play_suite
from ttt_lab.players.scripted import minimax_player
from ttt_lab_verifiers.games import Opponents, games, settings


def play(opponents: Opponents, game, player) -> dict:
    """What the verifiers env does with one game: step the episode with the player's replies."""
    episode = opponents.episode(game)
    while not episode.done:
        (reply,) = player.respond([episode])
        episode.step(reply)
    return episode.record().to_dict()


def test_the_eval_split_is_the_eval_suite() -> None:
    loaded = load(["eval.games=6", "eval.suite=default", "dataset.model_symbol=alternate"])
    player = minimax_player(p_random=0.5)
    ours = [r.to_dict() for result in play_suite(loaded.cfg, player) for r in result.records]
    split = games(loaded, "eval")
    opponents = Opponents(loaded, "eval")
    assert len({g.name for g in split}) == len(split) == len(ours) == 24
    assert [play(opponents, g, player) for g in split] == ours


def test_the_train_split_is_the_configured_dataset_and_opponent() -> None:
    loaded = load(["dataset.size=10", "dataset.p_min=0.1", "dataset.p_max=0.9", "opponent.tie_break=first",
                   "dataset.first_player=random", "seed=3"])
    cfg = loaded.cfg
    player = minimax_player(p_random=0.5)
    ours = [r.to_dict() for r in play_games(player, make_dataset(cfg.dataset, cfg.seed), cfg.env,
                                            build_opponent(cfg.opponent))]
    opponents = Opponents(loaded, "train")
    assert [play(opponents, g, player) for g in games(loaded, "train")] == ours


def test_an_unknown_split_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="split='test' is not a split of ttt-lab's environment; use one of eval, t"):
        games(settings(()), "test")
