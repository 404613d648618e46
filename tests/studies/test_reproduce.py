import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import cli

pytestmark = pytest.mark.xdist_group("reproduce")


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, smoke_home: Path, smoke_trained) -> tuple[Path, str]:
    """(home, run id) of one logged smoke training, shared by this module's tests: a copy of the
    session's in-process training (`smoke_trained`), which these tests change (a metric logged)."""
    home = tmp_path_factory.mktemp("reproduce") / "runs"
    shutil.copytree(smoke_home, home)
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{home}/mlflow.db")
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                filter_string="tags.`ttt.kind` = 'train'")
    assert run.info.run_id == smoke_trained.run_id
    return home, run.info.run_id


@pytest.fixture
def home(trained, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TTT_LAB_HOME", str(trained[0]))
    return trained[0]


def test_reproduce_the_first_steps_and_bad_ids(home: Path, trained) -> None:
    run_id = trained[1]
    out = cli("reproduce", run_id, "--steps", "1")
    assert "up to step 1 of run" in out.stdout and "identical" in out.stdout
    out = cli("reproduce", "0123456789abcdef", check=False)
    assert out.returncode == 2 and "No run 0123456789abcdef" in out.stderr


def test_reproduce_is_identical_and_catches_a_changed_metric(home: Path, trained) -> None:
    run_id = trained[1]
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


def test_a_run_logged_before_the_compact_tokenizer_is_rebuilt_with_the_word_level_one(tmp_path: Path) -> None:
    """A logged config without `model.tokens` is an older run: its tiny model read words."""
    import copy

    from ttt_lab.config.load import from_tree, load
    from ttt_lab.studies.reproduce import scratch_tree

    tree = copy.deepcopy(load(["model.tokens=compact"]).tree)
    assert from_tree(scratch_tree(tree, tmp_path, None), []).cfg.model.tokens == "compact"
    tree["model"]["tokens"] = "rows"
    assert from_tree(scratch_tree(tree, tmp_path, None), []).cfg.model.tokens == "rows"
    del tree["model"]["tokens"]
    assert from_tree(scratch_tree(tree, tmp_path, None), []).cfg.model.tokens == "words"
