"""`train.processes=2`: one training over two CPU processes (gloo), against the same training
in one process."""

from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.train.checkpoints import is_done

STEP = ["experiment=smoke", "train.sft.enabled=false", "steps=1", "batch_size=16", "num_generations=4",
        "temperature=1.5", "player.max_new_tokens=6", "env.max_model_turns=5", "lr=1e-3", "train.precision=fp32"]
TOLERANCE = 1e-6
"""Largest difference allowed between a weight after the 2-process update and after the
1-process one (the update itself is ~lr = 1e-3 per weight): float32 rounding of a gradient
averaged over two processes instead of summed in one. Hence `train.precision=fp32`: bf16's
rounding depends on how a batch is cut, so on a CPU where `auto` picks bf16 the two trainings
sample a few different tokens and their updates differ by a whole step (measured: 1e-3)."""


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



@pytest.mark.slow
def test_a_killed_multi_process_training_resumes_where_it_stopped(sft_run: tuple[Path, dict],
                                                                 tmp_path: Path) -> None:
    """Killed (every process) after its second or third trainer checkpoint, the 2-process training
    resumes from it on the re-run, in its one MLflow run; a third run skips the finished phase."""
    import json
    import os
    import signal
    import time

    from tests.conftest import start

    home = tmp_path / "two"
    args = [*STEP, "steps=4", "train.save_every=1", "train.saves_per_phase=4", f"model.path={sft_run[0]}",
            f"home={home}", "train.processes=2"]
    proc = start("train", *args, start_new_session=True)
    end = time.monotonic() + 240
    def saved() -> list[Path]:  # checkpoint-2, or checkpoint-3 once it has replaced it (save_total_limit=1)
        return [p for n in (2, 3) for p in home.glob(f"train/*/0-rl.work/trainer/checkpoint-{n}/trainer_state.json")]

    while not saved():
        assert time.monotonic() < end and proc.proc.poll() is None, proc.finish() and proc.text
        time.sleep(0.05)
    os.killpg(proc.proc.pid, signal.SIGKILL)
    proc.proc.wait()
    again = cli("train", *args)
    (phase,) = home.glob("train/*/0-rl")
    info = json.loads((phase / "done.json").read_text())
    assert info["steps"] == 4 and "checkpoint-" in (info["resumed_from"] or ""), (info, again.stdout)
    third = cli("train", *args)
    assert "phase rl: done, skipping" in third.stdout, third.stdout
    _, (run,) = _runs(home)
    assert run.info.status == "FINISHED" and run.data.tags.get("ttt.resumed") == "true"


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
