import time
from pathlib import Path

from tests.conftest import cli


def train_run(home: Path, *extra: str) -> str:
    import mlflow

    cli("train", "experiment=smoke", "steps=2", *extra)
    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`ttt.kind` = 'train'")
    return run.info.run_id


def test_reproduce_is_identical_and_catches_a_changed_metric(home: Path) -> None:
    run_id = train_run(home)
    out = cli("reproduce", run_id)
    assert "reproduced:" in out.stdout and "identical" in out.stdout, out.stdout

    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home}/mlflow.db")
    final = client.get_run(run_id).data.metrics
    step = max(m.step for m in client.get_metric_history(run_id, "eval/random/loss_rate"))
    client.log_metric(run_id, "eval/random/loss_rate", final["eval/random/loss_rate"] - 0.25,
                      timestamp=int(time.time() * 1000) + 1000, step=step)
    out = cli("reproduce", run_id, check=False)
    assert out.returncode == 1
    assert "eval/random/loss_rate" in out.stdout and "+0.25" in out.stdout


def test_reproduce_the_first_steps_and_bad_ids(home: Path) -> None:
    run_id = train_run(home)
    out = cli("reproduce", run_id, "--steps", "1")
    assert "up to step 1 of run" in out.stdout and "identical" in out.stdout
    out = cli("reproduce", "0123456789abcdef", check=False)
    assert out.returncode == 2 and "No run 0123456789abcdef" in out.stderr
