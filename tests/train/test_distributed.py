"""`train.processes=2`: one training over two CPU processes (gloo), against the same training
in one process."""

from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.train.checkpoints import is_done

pytestmark = pytest.mark.numerics
SHARED = pytest.mark.xdist_group("distributed")
"""The two comparisons share their one-process training (`one_process`): one worker runs both."""

STEP = ["experiment=smoke", "train.sft.enabled=false", "steps=1", "batch_size=16", "num_generations=4",
        "temperature=1.5", "player.max_new_tokens=6", "env.max_model_turns=5", "lr=1e-3", "train.precision=fp32"]
FLOOR = 2e-5
"""The least tolerance: float32 kernels that round differently (oneDNN on AMX) moved a weight by
1e-5 between the two designs, a hundredth of the update (lr = 1e-3 per weight)."""
SPREAD_FACTOR = 10
"""How far the 2-process update may sit from the 1-process one, in units of what this machine's
kernels make of the same batch cut in two in one process (gradient accumulation over two halves:
the same split the two processes make). Hence `train.precision=fp32`: bf16's rounding depends on
how a batch is cut, so the trainings would sample different tokens and differ by a whole step."""


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    (path,) = folder.glob("train/*/0-rl/model.safetensors")
    return load_file(path)


def _runs(home: Path):
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home}/mlflow.db")
    exp = client.get_experiment_by_name("ttt-lab")
    return client, client.search_runs([exp.experiment_id])


def _apart(x: dict, y: dict) -> float:
    return max(float((x[k] - y[k]).abs().max()) for k in x)


def _one_process_tolerance(args: list[str], one: Path, tmp_path: Path) -> float:
    """What this machine's float32 kernels make of cutting the batch in two, times SPREAD_FACTOR."""
    split = tmp_path / "split"
    cli("train", *args, f"home={split}", "tracking.enabled=false", "train.micro_batch_size=8")
    return max(SPREAD_FACTOR * _apart(_weights(one), _weights(split)), FLOOR)


@pytest.fixture(scope="module")
def one_process(sft_run: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path, float]:
    """The training's arguments, its one-process run and the tolerance this machine's kernels give
    it: what both comparisons below are made against, trained once for the two."""
    args = [*STEP, f"model.path={sft_run[0]}"]
    folder = tmp_path_factory.mktemp("one-process")
    one = folder / "one"
    cli("train", *args, f"home={one}", "tracking.enabled=false")
    return args, one, _one_process_tolerance(args, one, folder)


@SHARED
def test_two_processes_make_the_first_update_of_one(sft_run: tuple[Path, dict], one_process, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    start = sft_run[0]
    args, one, tolerance = one_process
    two = tmp_path / "two"
    out = cli("train", *args, f"home={two}", "train.processes=2")
    assert "training in 2 processes" in out.stdout and out.stdout.count("greedy policy") == 1, out.stdout

    base, a, b = load_file(start / "model.safetensors"), _weights(one), _weights(two)
    moved = _apart(a, base)
    # the tolerance must sit well inside the update, or any result would pass: a fifth of it catches a
    # 2-process update that is off by a fifth (fp32 on AMX rounds the split batch 1 % apart)
    assert moved > 5 * tolerance, ("the update is too small for the tolerance: the test would prove nothing",
                                   moved, tolerance)
    assert _apart(a, b) <= tolerance, (_apart(a, b), tolerance, moved)

    (phase,) = two.glob("train/*/0-rl")
    assert is_done(phase) and not list(two.glob("train/*/0-rl.work"))
    client, (run,) = _runs(two)
    assert run.info.status == "FINISHED"
    assert len(client.get_metric_history(run.info.run_id, "train/game/win_rate")) == 1
    assert "eval/optimal/draw_rate" in run.data.metrics


@SHARED
def test_two_processes_that_never_average_their_gradients_are_caught(one_process, tmp_path: Path) -> None:
    """The same comparison with a real bug injected (tests/train/unsynced: DDP's gradient averaging
    switched off in every training process): the tolerance does not hide it."""
    import os

    args, one, tolerance = one_process
    two = tmp_path / "two"
    bug = {**os.environ, "PYTHONPATH": str(Path(__file__).with_name("unsynced"))}
    cli("train", *args, f"home={two}", "tracking.enabled=false", "train.processes=2", env=bug)
    assert _apart(_weights(one), _weights(two)) > tolerance


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
    (["train.processes=2", "train.sft.enabled=true", "train.sft.loop=lean"], "1 while train.sft.loop=lean"),
])
def test_processes_the_batch_cannot_split_are_refused_first(home: Path, extra: list[str], message: str) -> None:
    out = cli("train", *STEP, *extra, check=False)
    assert out.returncode == 2 and message in " ".join(out.stderr.split()), out.stderr
    assert "training in" not in out.stdout and not (home / "train").exists()


def test_a_sweep_refuses_trials_of_several_processes(home: Path) -> None:
    out = cli("sweep", *STEP, "train.processes=2", "seed=0,1", check=False)
    assert out.returncode == 2 and "a sweep trains each trial in its worker's one process" in " ".join(
        out.stderr.split()), out.stderr
