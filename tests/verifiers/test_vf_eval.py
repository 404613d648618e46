"""`vf-eval` on ttt-lab's verifiers environment plays exactly the games ttt-lab plays: same
conversations (the scripted endpoint answers as a function of the whole conversation), same
outcomes, same named rewards with ttt-lab's weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, free_port
from tests.verifiers.conftest import offline_env, traces, vf_eval
from ttt_lab.config.build import build_opponent
from ttt_lab.config.load import load
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.players.openai_player import OpenAIPlayer

pytestmark = [pytest.mark.verifiers, pytest.mark.xdist_group("verifiers")]

EVAL_OVERRIDES = ["eval.games=2", "env.penalty.mode=per_move", "env.penalty.amount=0.15", "env.max_model_turns=6",
                  "env.think=required", "dataset.model_symbol=O", "env.reward.format_weight=0.3"]
TRAIN_OVERRIDES = ["dataset.size=6", "dataset.p_min=0.3", "dataset.p_max=0.6", "dataset.num_strata=3",
                   "dataset.first_player=random", "opponent.tie_break=first", "env.penalty.mode=forfeit",
                   "dataset.model_symbol=alternate", "seed=7"]


def by_game(rows: list[dict]) -> dict[tuple[str, int], dict]:
    out = {}
    for row in rows:
        assert row["ok"], row["errors"]
        (trace,) = row["traces"]
        game = trace["info"]["ttt_lab"]
        out[(game["opponent"], game["example"]["index"])] = {"trace": trace, "game": game}
    return out


def rewards(trace: dict) -> dict[str, float]:
    return {name: r["score"] for name, r in trace["rewards"].items()}


def assert_same_game(ours: dict, theirs: dict) -> None:
    """`ours` is a ttt-lab record (as a transcript line); `theirs` is the verifiers trace."""
    trace, game = theirs["trace"], theirs["game"]
    assert game["outcome"] == ours["outcome"]
    assert game["moves"] == ours["moves"]
    assert game["invalid_moves"] == ours["invalid_moves"]
    assert rewards(trace) == {k: ours["rewards"][k] for k in ("outcome", "format", "invalid")}
    weighted = sum(r["score"] * r["weight"] for r in trace["rewards"].values())
    assert weighted == pytest.approx(ours["rewards"]["total"], abs=1e-12)
    assert trace["metrics"][ours["outcome"]] == 1.0


def test_vf_eval_plays_what_ttt_lab_eval_plays(tmp_path: Path, endpoint: str, home: Path) -> None:
    run = vf_eval(tmp_path, endpoint, "scripted", "--env.taskset.overrides", *EVAL_OVERRIDES)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    theirs = by_game(traces(tmp_path))

    out = cli("eval", "player=openai", f"player.base_url={endpoint}", "player.served_model=scripted",
                  "tracking.enabled=false", "~experiment", *EVAL_OVERRIDES)  # the environment's settings
    (transcript,) = home.glob("evals/*/transcript.jsonl")
    ours = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert len(ours) == len(theirs) == 8, out.stdout
    for game in ours:
        assert_same_game(game, theirs[(game["opponent"], game["example"]["index"])])
    outcomes = {g["outcome"] for g in ours}
    assert len(outcomes) >= 2 and any(g["invalid_moves"] for g in ours), "the script must play varied games"
    weights = next(iter(theirs.values()))["trace"]["rewards"]
    assert {k: v["weight"] for k, v in weights.items()} == {"outcome": 1.0, "format": 0.3, "invalid": 1.0}


def test_the_train_split_plays_the_configured_dataset_and_opponent(tmp_path: Path, endpoint: str) -> None:
    run = vf_eval(tmp_path, endpoint, "scripted", "--env.taskset.split", "train",
                  "--env.taskset.overrides", *TRAIN_OVERRIDES)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    theirs = by_game(traces(tmp_path))

    cfg = load(["~experiment", *TRAIN_OVERRIDES]).cfg  # the environment composes the schema's settings
    examples = make_dataset(cfg.dataset, cfg.seed)
    records = play_games(OpenAIPlayer(endpoint, "scripted"), examples, cfg.env, build_opponent(cfg.opponent))
    assert len(records) == len(theirs) == 6
    for rec in records:
        theirs_game = theirs[("train", rec.example.index)]
        assert theirs_game["game"]["example"] == rec.example.to_dict()
        assert_same_game(rec.to_dict(), theirs_game)
    assert {r.example.model_symbol for r in records} == {"X", "O"}
    assert all(0.3 <= r.example.p_random <= 0.6 for r in records)
    assert {r.example.stratum for r in records} == {0, 1, 2}


@pytest.mark.parametrize(("args", "expected"), [
    (["--env.taskset.overrides", "env.bogus=1"], "Key 'bogus' not in 'EnvConfig'"),
    (["--env.taskset.overrides", "env.penalty.mode=sometimes"], "Allowed: flat | per_move | forfeit"),
    (["--env.taskset.bogus", "1"], "Extra inputs are not permitted"),
    (["--env.taskset.split", "test"], "Input should be 'eval' or 'train'"),
])
def test_an_unknown_option_is_one_clear_error(tmp_path: Path, args: list[str], expected: str) -> None:
    run = vf_eval(tmp_path, "http://127.0.0.1:9/v1", "scripted", "--dry-run", "True", *args)
    text = " ".join((run.stdout + run.stderr).replace("│", " ").split())
    assert run.returncode != 0
    assert expected in text, text[-2000:]
    assert not (tmp_path / "vf").exists() or not list((tmp_path / "vf").glob("*/traces.jsonl"))


def test_a_server_that_is_down_records_no_rewards(tmp_path: Path) -> None:
    run = vf_eval(tmp_path, f"http://127.0.0.1:{free_port()}/v1", "scripted", "--env.taskset.overrides",
                  "eval.games=1", "eval.suite=quick")
    rows = traces(tmp_path)
    assert rows and all(not row["ok"] for row in rows), run.stdout[-2000:]
    assert all("stopped after 0 replies" in json.dumps(row["errors"]) for row in rows)
    assert all(not t["rewards"] for row in rows for t in row["traces"])
    assert offline_env(tmp_path)["UV_PYTHON_DOWNLOADS"] == "never"


def test_load_environment_builds_the_same_tasks_in_python() -> None:
    from ttt_lab_verifiers import load_environment

    env = load_environment(["eval.games=3", "eval.suite=quick", "env.think=off"])
    tasks = list(env.taskset)
    assert [t.data.name for t in tasks] == ["random#0", "random#1", "random#2", "optimal#0", "optimal#1", "optimal#2"]
    from ttt_lab.env import prompts

    assert {t.data.system_prompt for t in tasks} == {prompts.system_prompt("X", "off")}
    train = load_environment(["dataset.size=5"], split="train")
    assert [t.data.entry for t in train.taskset] == ["train"] * 5
    with pytest.raises(ValueError, match="Key 'bogus' not in 'EnvConfig'"):
        load_environment(["env.bogus=1"])
