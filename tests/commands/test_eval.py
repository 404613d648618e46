import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.conftest import cli


def transcript_rates(path: Path) -> dict[str, dict[str, float]]:
    counts: dict[str, Counter] = defaultdict(Counter)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        counts[rec["opponent"]][rec["outcome"]] += 1
    out = {}
    for opp, c in counts.items():
        n = sum(c.values())
        out[opp] = {"win": c["win"] / n, "draw": c["draw"] / n, "loss": (n - c["win"] - c["draw"]) / n, "n": n}
    return out


def runs(home: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")
    return mlflow.search_runs(search_all_experiments=True, output_format="list")


def test_minimax_player_never_loses_and_metrics_match_the_transcript(home: Path) -> None:
    out = cli("eval", "player=minimax", "games=300", "eval.mode=sampled")
    assert "optimal" in out.stdout and "minimax_p50" in out.stdout
    (run,) = runs(home)
    m = run.data.metrics
    for opp in ("random", "optimal", "minimax_p25", "minimax_p50"):
        assert m[f"eval/{opp}/loss_rate"] == 0.0
    assert m["eval/optimal/draw_rate"] == 1.0
    assert m["eval/optimal/draw_rate_lo"] > 0.98
    artifacts = Path(run.info.artifact_uri.removeprefix("file://"))
    rates = transcript_rates(artifacts / "transcript.jsonl")
    for opp, r in rates.items():
        assert r["n"] == 300
        for k in ("win", "draw", "loss"):
            assert m[f"eval/{opp}/{k}_rate"] == pytest.approx(r[k])


def test_random_player_loses_most_games_against_the_optimal_opponent(home: Path) -> None:
    cli("eval", "player=random", "eval.suite=quick", "games=400")
    (run,) = runs(home)
    assert run.data.metrics["eval/optimal/loss_rate"] > 0.6
    assert run.data.metrics["eval/optimal/win_rate"] == 0.0


def test_run_has_params_tags_and_artifacts_and_hash_is_stable(home: Path) -> None:
    cli("eval", "eval.suite=quick", "games=20", "seed=5", "eval.mode=sampled")
    cli("eval", "eval.suite=quick", "games=20", "seed=5", "eval.mode=sampled")
    cli("eval", "eval.suite=quick", "games=20", "seed=6", "eval.mode=sampled")
    rs = sorted(runs(home), key=lambda r: r.info.start_time)
    first = rs[0]
    assert first.data.params["env.max_model_turns"] == "6"  # the default preset's (experiment=tiny_cpu_quick)
    assert first.data.params["train.phases.0.batch_size"] == "128"
    assert first.data.params["seed"] == "5"
    tags = first.data.tags
    for key in ("ttt.config_hash", "mlflow.source.git.commit", "ttt.git_dirty", "ttt.command", "ttt.seed",
                "ttt.version.python", "ttt.version.torch", "ttt.version.transformers", "ttt.version.mlflow",
                "ttt.version.trl", "ttt.version.ttt-lab"):
        assert key in tags, key
    assert "eval" in tags["ttt.command"] and "seed=5" in tags["ttt.command"]
    assert rs[1].data.tags["ttt.config_hash"] == tags["ttt.config_hash"]
    assert rs[2].data.tags["ttt.config_hash"] != tags["ttt.config_hash"]
    folder = Path(first.info.artifact_uri.removeprefix("file://"))
    names = {p.name for p in folder.iterdir()}
    assert {"config.yaml", "overrides.txt", "eval_table.csv", "transcript.jsonl"} <= names
    assert "seed: 5" in (folder / "config.yaml").read_text()


def test_eval_without_tracking_writes_a_transcript_under_home(home: Path) -> None:
    out = cli("eval", "tracking.enabled=false", "eval.suite=quick", "games=10", "eval.mode=sampled")
    (transcript,) = (home / "evals").glob("*/transcript.jsonl")
    assert len(transcript.read_text().splitlines()) == 20
    assert "MLflow run" not in out.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["eval", "opponent=nope"], "Choose one of"),
        (["eval", "env.nokey=1"], "env.nokey"),
        (["eval", "env.max_model_turns=abc"], "Integer"),
        (["eval", "name=x"], "ambiguous"),
        (["eval", "tracking=server", "tracking.uri=http://127.0.0.1:9"], "cannot reach the MLflow tracking server"),
        (["play", "--first", "nobody"], "--first"),
    ],
)
def test_bad_input_is_one_paragraph_exit_2_no_traceback(home: Path, args: list[str], words: str) -> None:
    out = cli(*args, check=False)
    assert out.returncode == 2
    assert words in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stderr.strip().startswith("Error:")


def test_unwritable_home_is_explained(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = cli("eval", "eval.suite=quick", "games=2", check=False, env=_env(TTT_LAB_HOME=str(blocker / "runs")))
    assert out.returncode == 2
    assert "cannot write the tracking store" in out.stderr and "TTT_LAB_HOME" in out.stderr


def test_debug_shows_the_traceback(home: Path) -> None:
    out = cli("--debug", "eval", "opponent=nope", check=False)
    assert out.returncode != 0
    assert "Traceback" in out.stderr


def _env(**extra: str) -> dict[str, str]:
    import os

    return {**os.environ, **extra}


@pytest.mark.parametrize(("args", "words"), [
    (["ui", "--port", "70000"], "less than or equal to 65535"),
    (["runs", "list", "--limit", "0"], "greater than or equal to 1"),
    (["play", "--watch", "--delay", "-1"], "greater than or equal to 0"),
])
def test_out_of_range_options_are_usage_errors_not_tracebacks(home: Path, args: list[str], words: str) -> None:
    out = cli(*args, check=False)
    assert out.returncode == 2 and words in out.stderr and args[-2] in out.stderr, out.stderr
    assert "Traceback" not in out.stderr + out.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["report", "[/]"], "No study '[/]'"),
    (["eval", "learning_rate=inf"], "a finite number"),
    (["eval", "env.reward.format_weight=nan"], "a finite number"),
])
def test_errors_with_markup_or_non_finite_numbers_are_one_paragraph(home: Path, args: list[str], words: str) -> None:
    out = cli(*args, check=False)
    assert out.returncode == 2 and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stderr.strip().startswith("Error:")
