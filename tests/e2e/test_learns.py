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


def fork_rate(experiment: str, checkpoint: str) -> float:
    out = cli("audit", "policy", f"experiment={experiment}", "player=hf", f"model.path={checkpoint}",
              "--warn-only", env=threads())
    path = re.search(r"wrote (\S+audit\.json)", out.stdout).group(1)
    checks = {c["name"]: c for c in json.loads(Path(path).read_text())["checks"]}
    return checks["fork_allowed_rate"]["value"]


def published_level(experiment: str, home: Path) -> None:
    """Train `experiment` from an empty home, print every rate at greedy and at temperature 1.0,
    and assert the published level: >= 97 % draws against the optimal opponent, >= 87 % wins
    against the random one (never-losing play wins 87 % of these games) and >= 0.9 x the minimax
    player's, invalid moves < 1 % against both, forks allowed < 1 % in the policy audit, and RL
    above its warm-up beyond both 95 % intervals on one of these rates."""
    m, tags, minutes = train(home, experiment)
    ckpt = tags["ttt.checkpoint"]
    assert Path(ckpt).is_dir()
    sampled = evaluate(f"experiment={experiment}", "player=hf", f"model.path={ckpt}", "player.temperature=1.0",
                       experiment="sampled")
    forks = fork_rate(experiment, ckpt)
    ref = evaluate("player=minimax", experiment="reference")
    print(f"{experiment}: {minutes:.1f} min (reported, not asserted: timing goals live in benchmarks/); "
          f"after SFT {rates(m, 'eval_sft')}; final greedy {rates(m)}; temperature 1.0 {rates(sampled)}; "
          f"fork-allowed {forks:.1%}; RL against SFT beyond the intervals: {beyond_intervals(m)}, "
          f"game by game: {paired_gain(m)}; minimax reference {rates(ref)}")
    assert m["eval/random/invalid_rate"] < 0.01 and m["eval/optimal/invalid_rate"] < 0.01
    assert m["eval/random/win_rate"] >= 0.87 and m["eval/random/win_rate"] >= 0.9 * ref["eval/random/win_rate"]
    assert m["eval/optimal/draw_rate"] >= 0.97
    assert forks < 0.01
    assert beyond_intervals(m), f"{rates(m)}; after SFT {rates(m, 'eval_sft')}; {paired_gain(m)}"


def test_tiny_cpu_recipe_plays_at_the_published_level(home: Path) -> None:
    """tiny_cpu warms up for three epochs (94-98 % draws against the optimal opponent on every
    seed and precision measured), then RL against opponents of every strength and then strong
    ones. Measured on a 2-core AMD EPYC with AVX512-BF16 (bf16, two threads): from 96.2 % draws,
    92.8 % wins and 0.6 % invalid moves after the warm-up to 99.5 % draws (beyond the warm-up's
    interval), 92.5 % wins, 0.1 % invalid moves and no fork allowed; one thread, seeds 1 and 2:
    99.5 / 99.8 % draws from 96.0 / 93.2 %, 94.2 / 90.0 % wins."""
    published_level("tiny_cpu", home)


def test_tiny_cpu_long_recipe_plays_at_the_published_level(home: Path) -> None:
    """tiny_cpu's warm-up and more RL. Measured on a 2-core AMD EPYC with AVX512-BF16 (bf16, two
    threads): from 96.2 % draws after the warm-up to 100.0 % (beyond its interval), 94.0 % wins,
    0.3 % invalid moves, no fork allowed; one thread, seeds 1 and 2: 100.0 % draws both, 94.2 /
    90.8 % wins. With the published weak-only first phase it ended at 98.0 %, inside the interval."""
    published_level("tiny_cpu_long", home)
