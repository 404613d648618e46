import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli, free_port
from tests.players.endpoint import running_endpoint
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.openai_player import EndpointError, OpenAIPlayer

pytestmark = pytest.mark.xdist_group("openai")


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    with running_endpoint() as url:
        yield url


def examples(n: int = 8):
    return make_dataset(DatasetConfig(size=n, p_min=0.0, p_max=0.0, num_strata=1, model_symbol="alternate"), 0)


def test_a_perfect_endpoint_draws_against_the_optimal_opponent(server: str) -> None:
    player = OpenAIPlayer(server, "perfect", concurrency=4)
    records = play_games(player, examples(), EnvConfig(), MinimaxOpponent())
    assert {r.outcome for r in records} == {"draw"}
    assert not player.failures


def test_eval_through_the_cli(server: str, home: Path) -> None:
    out = cli("eval", "player=openai", f"player.base_url={server}", "player.served_model=perfect",
              "eval.suite=quick", "games=6")
    assert "optimal" in out.stdout and "100.0" in out.stdout


def test_a_value_read_from_the_environment_is_in_no_file_and_on_no_console_line(server: str, home: Path) -> None:
    secret = "tok-5ecret-9f3e"  # the test server plays perfectly for any model name it does not know
    env = dict(os.environ, TTT_TEST_MODEL=secret)
    out = cli("eval", "player=openai", f"player.base_url={server}", "player.served_model=${oc.env:TTT_TEST_MODEL}",
              "eval.suite=quick", "games=4", env=env)
    assert "100.0" in out.stdout and secret not in out.stdout + out.stderr
    shown = cli("config", "show", "player=openai", "player.served_model=${oc.env:TTT_TEST_MODEL}", env=env)
    assert "served_model: '***'" in shown.stdout or "served_model: ***" in shown.stdout
    leaked = [str(p) for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert not leaked, leaked


@pytest.mark.parametrize("model", ["slow", "garbage", "broken"])
def test_failing_requests_count_as_invalid_moves(server: str, model: str) -> None:
    player = OpenAIPlayer(server, model, timeout_s=0.5, max_retries=0, concurrency=2)
    player._reached = True  # the server is up; only the answers are bad
    records = play_games(player, examples(2), EnvConfig(max_model_turns=2), MinimaxOpponent())
    assert all(r.outcome == "turn_cap" and r.invalid_moves == 2 for r in records)
    assert sum(player.failures.values()) == 4


def test_endpoint_down_is_a_clear_error() -> None:
    player = OpenAIPlayer(f"http://127.0.0.1:{free_port()}/v1", "perfect", max_retries=0, timeout_s=2)
    with pytest.raises(EndpointError, match="cannot reach the OpenAI-compatible endpoint"):
        play_games(player, examples(2), EnvConfig(), MinimaxOpponent())


def test_endpoint_down_through_the_cli(home: Path) -> None:
    out = cli("eval", "player=openai", f"player.base_url=http://127.0.0.1:{free_port()}/v1", "player.max_retries=0",
              "eval.suite=quick", "games=2", check=False)
    assert out.returncode == 2
    assert "cannot reach the OpenAI-compatible endpoint" in out.stderr
    assert "Traceback" not in out.stderr
