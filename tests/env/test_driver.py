import json
import random
import subprocess
import sys
from collections import defaultdict

from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.board import play
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent
from ttt_lab.players.scripted import ScriptedPlayer, minimax_player, random_player

from .helpers import FunctionPlayer, first_free


def test_one_call_per_round_for_the_whole_batch() -> None:
    player = FunctionPlayer(first_free)
    examples = make_dataset(DatasetConfig(size=64), 0)
    finished = []
    records = play_games(player, examples, EnvConfig(), MinimaxOpponent(), on_finished=finished.append)
    assert len(records) == 64
    assert player.calls <= 5  # at most 5 model moves per game, all games in each call
    assert sum(finished) == 64
    assert [r.example for r in records] == examples


def test_max_batch_bounds_games_in_flight() -> None:
    sizes = []

    class Spy:
        def respond(self, turns):
            sizes.append(len(turns))
            return [first_free(t) for t in turns]

    play_games(Spy(), make_dataset(DatasetConfig(size=50), 0), EnvConfig(), RandomOpponent(), max_batch=16)
    assert max(sizes) == 16


def test_minimax_player_never_loses_random_player_mostly_loses() -> None:
    examples = make_dataset(DatasetConfig(size=400, p_min=0.0, p_max=0.0, num_strata=1), 0)
    mm = play_games(minimax_player(), examples, EnvConfig(), MinimaxOpponent())
    assert {r.outcome for r in mm} == {"draw"}
    rnd = play_games(random_player(), examples, EnvConfig(), MinimaxOpponent())
    losses = sum(r.outcome == "loss" for r in rnd)
    assert losses > 0.6 * len(rnd)
    assert not any(r.outcome == "win" for r in rnd)


def test_records_do_not_depend_on_the_order_games_are_played() -> None:
    examples = make_dataset(DatasetConfig(size=200), 4)
    env, opp = EnvConfig(), MinimaxOpponent(p_random=0.3)
    forward = play_games(random_player(), examples, env, opp)
    shuffled = examples[:]
    random.Random(0).shuffle(shuffled)
    back = play_games(random_player(), shuffled, env, opp, max_batch=7)
    by_index = {r.example.index: r.to_json() for r in back}
    assert [r.to_json() for r in forward] == [by_index[e.index] for e in examples]


def test_rollouts_of_one_example_see_identical_opponent_replies() -> None:
    """A GRPO group: one example, many different model policies; the same position must
    get the same reply in every rollout, so reward differences come from the model."""
    ex = make_dataset(DatasetConfig(size=1, p_min=0.5, p_max=0.5, num_strata=1), 9)[0]
    replies: dict[str, set[int]] = defaultdict(set)
    for stream in range(40):
        player = ScriptedPlayer(RandomOpponent(stream=1000 + stream))
        (rec,) = play_games(player, [ex] * 1, EnvConfig(), MinimaxOpponent(p_random=0.5))
        board = "........."
        for by, cell in rec.moves:
            if by == "opponent":
                replies[board].add(cell)
            board = play(board, cell)
    assert len(replies) > 10
    assert all(len(cells) == 1 for cells in replies.values())


def test_records_round_trip_through_json() -> None:
    recs = play_games(random_player(), make_dataset(DatasetConfig(size=20), 0), EnvConfig(), RandomOpponent())
    for r in recs:
        assert GameRecord.from_dict(json.loads(r.to_json())) == r


GAME_SCRIPT = """
import sys
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.board import play
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.scripted import random_player
recs = play_games(random_player(), make_dataset(DatasetConfig(size=300), 21), EnvConfig(),
                  MinimaxOpponent(p_random=0.4))
sys.stdout.write("".join(r.to_json() + "\\n" for r in recs))
"""


def test_game_records_are_byte_identical_in_two_processes() -> None:
    outs = [
        subprocess.run([sys.executable, "-c", GAME_SCRIPT], capture_output=True, check=True,
                       env={"PYTHONHASHSEED": h}).stdout
        for h in ("0", "12345")
    ]
    assert outs[0] == outs[1]
    assert len(outs[0].splitlines()) == 300


def test_per_game_seeding_gives_repeated_examples_different_dice() -> None:
    ex = make_dataset(DatasetConfig(size=1, p_min=1.0, p_max=1.0, num_strata=1), 2)[0]
    env, opp = EnvConfig(), RandomOpponent()
    same = play_games(minimax_player(tie_break="first"), [ex] * 20, env, opp)
    assert len({tuple(r.moves) for r in same}) == 1
    diff = play_games(minimax_player(tie_break="first"), [ex] * 20, env, opp, opponent_seeding="per_game")
    assert len({tuple(r.moves) for r in diff}) > 5
    again = play_games(minimax_player(tie_break="first"), [ex] * 20, env, opp, opponent_seeding="per_game")
    assert [r.moves for r in again] == [r.moves for r in diff]
