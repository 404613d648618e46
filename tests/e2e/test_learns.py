"""The embedded CPU recipes must learn (slow: whole `ttt-lab train experiment=tiny_cpu` and
`experiment=tiny_cpu_long` runs; `make test-slow`)."""

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.conftest import cli

pytestmark = pytest.mark.slow


def threads() -> dict[str, str]:
    """The environment at call time (the `home` fixture sets TTT_LAB_HOME) with 2 torch threads."""
    return {**os.environ, "TTT_LAB_TORCH_THREADS": "2"}


def tracked(home: Path, experiment: str, kind: str) -> list:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")
    return mlflow.search_runs(experiment_names=[experiment], filter_string=f"tags.`ttt.kind` = '{kind}'",
                              output_format="list")


def train(home: Path, experiment: str) -> tuple[dict[str, float], dict[str, str], float]:
    """Train from an empty home; the final metrics, tags and wall time in minutes."""
    start = time.monotonic()
    cli("train", f"experiment={experiment}", timeout=60 * 60, env=threads())
    minutes = (time.monotonic() - start) / 60
    (run,) = tracked(home, "ttt-lab", "train")
    return run.data.metrics, run.data.tags, minutes


def evaluate(*overrides: str, experiment: str) -> dict[str, float]:
    cli("eval", "eval.suite=quick", "games=400", f"tracking.experiment={experiment}", *overrides, env=threads())
    return tracked(Path(os.environ["TTT_LAB_HOME"]), experiment, "eval")[0].data.metrics


def rates(m: dict[str, float], prefix: str = "eval") -> str:
    return (f"wins vs random {m[f'{prefix}/random/win_rate']:.1%}, draws vs optimal "
            f"{m[f'{prefix}/optimal/draw_rate']:.1%}, invalid {m[f'{prefix}/random/invalid_rate']:.2%} / "
            f"{m[f'{prefix}/optimal/invalid_rate']:.2%}")


def beyond_intervals(m: dict[str, float]) -> bool:
    """RL above SFT beyond both 95 % intervals on one of the published level's rates: wins against
    random, draws against optimal, or fewer invalid moves against either opponent."""
    return (m["eval/random/win_rate_lo"] > m["eval_sft/random/win_rate_hi"]
            or m["eval/optimal/draw_rate_lo"] > m["eval_sft/optimal/draw_rate_hi"]
            or any(m[f"eval/{o}/invalid_rate_hi"] < m[f"eval_sft/{o}/invalid_rate_lo"] for o in ("random", "optimal")))


def paired_gain(m: dict[str, float]) -> str:
    return "; ".join(f"{o}: {m[f'eval_gain/{o}/better']:.0f} games better, {m[f'eval_gain/{o}/worse']:.0f} worse, "
                     f"p = {m[f'eval_gain/{o}/p_value']:.3g}" for o in ("random", "optimal"))


def assert_rl_beats_sft(m: dict[str, float]) -> None:
    """Beyond the two rates' 95 % intervals, or (the sharper test: both played on the same games)
    more games better than worse with an exact sign test p < 0.05 against some opponent."""
    paired = any(m[f"eval_gain/{o}/better"] > m[f"eval_gain/{o}/worse"] and m[f"eval_gain/{o}/p_value"] < 0.05
                 for o in ("random", "optimal"))
    assert beyond_intervals(m) or paired, f"{rates(m)}; after SFT {rates(m, 'eval_sft')}; {paired_gain(m)}"


def test_tiny_cpu_recipe_learns(home: Path) -> None:
    """tiny_cpu warms up for three epochs (94-98 % draws against the optimal opponent on every
    seed and precision measured) and its 140 RL steps clean up: measured on a 2-core AMD EPYC with
    AVX512-BF16 (bf16, two threads), from 96.2 % draws, 92.8 % wins and 0.6 % invalid moves after
    the warm-up to 97.5 % draws, 94.0 % wins and no invalid move: RL beyond the warm-up's interval
    on invalid moves (0.6 -> 0.0 % against the random opponent); game by game 11 better / 5 worse
    and 13 / 8, not significant on their own."""
    m, tags, minutes = train(home, "tiny_cpu")
    ref = evaluate("player=minimax", experiment="reference")
    print(f"tiny_cpu: {minutes:.1f} min (reported, not asserted: timing goals live in benchmarks/); "
          f"after SFT {rates(m, 'eval_sft')}; final {rates(m)}; RL against SFT beyond the intervals: "
          f"{beyond_intervals(m)}, game by game: {paired_gain(m)}; minimax reference {ref}")
    assert m["eval/random/invalid_rate"] < 0.01 and m["eval/optimal/invalid_rate"] < 0.01
    assert m["eval/random/win_rate"] >= 0.9 * ref["eval/random/win_rate"]
    assert m["eval/optimal/draw_rate"] >= 0.95
    assert_rl_beats_sft(m)
    assert Path(tags["ttt.checkpoint"]).is_dir()


def fork_rate(checkpoint: str) -> float:
    out = cli("audit", "policy", "experiment=tiny_cpu_long", "player=hf", f"model.path={checkpoint}",
              "--warn-only", env=threads())
    path = re.search(r"wrote (\S+audit\.json)", out.stdout).group(1)
    checks = {c["name"]: c for c in json.loads(Path(path).read_text())["checks"]}
    return checks["fork_allowed_rate"]["value"]


def test_tiny_cpu_long_recipe_plays_near_the_published_level(home: Path) -> None:
    """The published level, asserted: >= 97 % draws against the optimal opponent and >= 87 % wins
    against the random one (never-losing play wins 87 % of these games), invalid moves < 1 %, forks
    < 1 %, and RL better than its warm-up (`assert_rl_beats_sft`). Measured on a 2-core AMD EPYC
    with AVX512-BF16 (bf16): with two threads 98.0 % draws, 94.8 % wins, 0.15 % invalid, 0.8 %
    forks, from 96.2 % / 92.8 % / 0.6 % after the warm-up (11 games better and 2 worse against the
    random opponent, p = 0.02; the rates' intervals overlap); with one thread, seeds 0 and 1,
    100.0 % draws both (98.2 / 96.0 % after the warm-up), 92.2 / 95.2 % wins, invalid 0.0 / 0.2 %
    (5.7 / 0.1 % after the warm-up): beyond the intervals on invalid moves / on draws."""
    m, tags, minutes = train(home, "tiny_cpu_long")
    ckpt = tags["ttt.checkpoint"]
    sampled = evaluate("experiment=tiny_cpu_long", "player=hf", f"model.path={ckpt}", "player.temperature=1.0",
                       experiment="sampled")
    forks = fork_rate(ckpt)
    reached = {"draws >= 97 %": m["eval/optimal/draw_rate"] >= 0.97, "wins >= 87 %": m["eval/random/win_rate"] >= 0.87,
               "invalid < 1 %": m["eval/random/invalid_rate"] < 0.01, "forks < 1 %": forks < 0.01}
    print(f"tiny_cpu_long: {minutes:.1f} min; after SFT {rates(m, 'eval_sft')}; final greedy {rates(m)}; "
          f"temperature 1.0 {rates(sampled)}; fork-allowed {forks:.1%}; RL against SFT beyond the intervals: "
          f"{beyond_intervals(m)}, game by game: {paired_gain(m)}; published level: {reached}")
    assert m["eval/random/invalid_rate"] < 0.01 and m["eval/optimal/invalid_rate"] < 0.01
    assert m["eval/random/win_rate"] >= 0.87
    assert m["eval/optimal/draw_rate"] >= 0.97
    assert forks < 0.01
    assert_rl_beats_sft(m)
