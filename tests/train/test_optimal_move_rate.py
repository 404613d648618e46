"""`train/game/optimal_move_rate`: the share of the policy's moves that keep the game's value."""

from ttt_lab.config.load import load
from ttt_lab.config.schema import SuiteEntry
from ttt_lab.env.driver import play_games
from ttt_lab.evaluation.suite import suite_examples
from ttt_lab.game.opponents import RandomOpponent
from ttt_lab.players.scripted import minimax_player, random_player
from ttt_lab.train.callbacks import game_metrics, optimal_moves


def test_perfect_play_keeps_every_move_and_random_play_does_not() -> None:
    cfg = load(["tracking.enabled=false"]).cfg
    examples = suite_examples(cfg, 0, SuiteEntry("random", opponent="random"))
    perfect = play_games(minimax_player(), examples, cfg.env, RandomOpponent())
    random = play_games(random_player(), examples, cfg.env, RandomOpponent())
    assert game_metrics(perfect)["game/optimal_move_rate"] == 1.0
    kept, total = optimal_moves(random)
    assert total == sum(sum(who == "model" for who, _ in g.moves) for g in random)
    assert 0.3 < kept / total < 0.9
