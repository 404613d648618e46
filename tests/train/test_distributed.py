"""`train.processes=2`: one training over two CPU processes (gloo), against the same training
in one process."""

from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.train.checkpoints import is_done

STEP = ["experiment=smoke", "train.sft.enabled=false", "steps=1", "batch_size=16", "num_generations=4",
        "temperature=1.5", "player.max_new_tokens=6", "env.max_model_turns=5", "lr=1e-3"]
TOLERANCE = 1e-6
"""Largest difference allowed between a weight after the 2-process update and after the
1-process one (the update itself is ~lr = 1e-3 per weight): float32 rounding of a gradient
averaged over two processes instead of summed in one."""


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    (path,) = folder.glob("train/*/0-rl/model.safetensors")
    return load_file(path)


def _runs(home: Path):
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home}/mlflow.db")
    exp = client.get_experiment_by_name("ttt-lab")
    return client, client.search_runs([exp.experiment_id])


def test_two_processes_make_the_first_update_of_one(sft_run: tuple[Path, dict], tmp_path: Path) -> None:
    from safetensors.torch import load_file

    start = sft_run[0]
    args = [*STEP, f"model.path={start}"]
    one, two = tmp_path / "one", tmp_path / "two"
    cli("train", *args, f"home={one}", "tracking.enabled=false")
    out = cli("train", *args, f"home={two}", "train.processes=2")
    assert "training in 2 processes" in out.stdout and out.stdout.count("greedy policy") == 1, out.stdout

    base, a, b = load_file(start / "model.safetensors"), _weights(one), _weights(two)
    moved = max(float((a[k] - base[k]).abs().max()) for k in a)
    apart = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert moved > 1e-4, "the update changed nothing: the test would prove nothing"
    assert apart <= TOLERANCE, (apart, moved)

    (phase,) = two.glob("train/*/0-rl")
    assert is_done(phase) and not list(two.glob("train/*/0-rl.work"))
    client, (run,) = _runs(two)
    assert run.info.status == "FINISHED"
    assert len(client.get_metric_history(run.info.run_id, "train/game/win_rate")) == 1
    assert "eval/optimal/draw_rate" in run.data.metrics

    again = cli("train", *args, f"home={two}", "train.processes=2")
    assert "phase rl: done, skipping" in again.stdout, again.stdout
    assert len(_runs(two)[1]) == 1


@pytest.mark.parametrize(("extra", "message"), [
    (["train.processes=3"], "whole groups of 4 per process: 1, 2 here"),
    (["train.processes=0"], "train.processes"),
    (["train.processes=2", "train.sft.enabled=true", "train.sft.batch_size=5"], "train.sft.batch_size (5)"),
])
def test_processes_the_batch_cannot_split_are_refused_first(home: Path, extra: list[str], message: str) -> None:
    out = cli("train", *STEP, *extra, check=False)
    assert out.returncode == 2 and message in " ".join(out.stderr.split()), out.stderr
    assert "training in" not in out.stdout and not (home / "train").exists()


def test_a_sweep_refuses_trials_of_several_processes(home: Path) -> None:
    out = cli("sweep", *STEP, "train.processes=2", "seed=0,1", check=False)
    assert out.returncode == 2 and "a sweep trains each trial in its worker's one process" in " ".join(
        out.stderr.split()), out.stderr
