"""Two processes training the same config share one folder: one trains, the other waits and reuses."""

from pathlib import Path

from tests.conftest import start
from ttt_lab.config.load import load
from ttt_lab.locks import file_lock

ARGS = ["experiment=smoke", "steps=2", "tracking.enabled=false"]
WAITING = "another process is training this config"


def test_two_processes_on_one_config_train_it_once(home: Path) -> None:
    folder = home / "train" / load(ARGS).config_hash
    procs = []
    with file_lock(folder.with_name(folder.name + ".lock")):  # both start while the config is taken
        for _ in range(2):
            procs.append(start("train", *ARGS))
            procs[-1].wait_for(WAITING)
    for p in procs:
        assert p.finish() == 0, p.text
    texts = [p.text for p in procs]
    assert sum("done, skipping" in t for t in texts) == 1, texts  # the second one reused the first's phase
    tables = [t[t.index("greedy policy"):t.index("checkpoint:")] for t in texts]
    assert tables[0] == tables[1]
    assert len([p for p in folder.iterdir() if p.name.endswith(".work")]) == 0


def test_the_warm_up_cache_is_keyed_on_content_not_on_how_the_home_is_spelled(home: Path, monkeypatch) -> None:
    """A CLI training with the relative home `runs` and a sweep trial with the absolute home
    (what sweep workers set) share one SFT warm-up: the cache key hashes the base model's files."""
    import os

    from tests.conftest import cli

    warm = ["experiment=smoke", "train.sft.enabled=true", "train.sft.num_games=16", "train.sft.epochs=1"]
    monkeypatch.chdir(home.parent)
    env = {k: v for k, v in os.environ.items() if k != "TTT_LAB_HOME"}
    trained = cli("train", *warm, f"home={home.name}", "tracking.enabled=false", env=env)
    assert "SFT warm-up: 16 teacher games" in trained.stdout
    assert "final against SFT, exact: random " in trained.stdout, trained.stdout  # greedy: evaluated exactly
    swept = cli("sweep", *warm, "batch_size=8,16", "--name", "warm", env={**env, "TTT_LAB_HOME": str(home)})
    assert "trial 0 COMPLETE" in swept.stdout, swept.stdout
    log = (home / "studies" / "warm" / "trial-0.log").read_text()
    assert "SFT warm-up: reusing" in log, log
    assert len([p for p in (home / "cache").iterdir() if p.is_dir()]) == 1
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")
    trials = mlflow.search_runs(experiment_names=["warm"], filter_string="tags.`ttt.kind` = 'trial'",
                                output_format="list")
    assert len(trials) == 2
    for run in trials:  # the final policy against its warm-up, game by game on the same games
        m = run.data.metrics
        assert 0.0 <= m["eval_gain/optimal/p_value"] <= 1.0 and "eval_gain/random/better" in m, m


def test_the_warm_up_key_changes_with_what_the_warm_up_reads_and_only_that(tiny_checkpoint: Path) -> None:
    from ttt_lab.train.pipeline import sft_key

    def key(*more: str) -> str:
        return sft_key(load(["experiment=tiny_cpu", *more]).cfg, str(tiny_checkpoint))

    base = key()
    assert key("dataset.sampling=iid") == base  # the RL phases' sampling: the warm-up never reads it
    assert key("train.phases.0.p_min=0.0") == base
    assert key("seed=1") != base and key("dataset.p_max=0.5") != base and key("train.sft.epochs=1") != base
    assert key("train.sft.teacher_scoring=value") != base  # tiny_cpu's teacher plays exploit
    assert key("train.sft.teacher_trees=1") != key("train.sft.teacher_trees=3") != base
    from ttt_lab.engine.precision import native_bf16

    # a warm-up is keyed on how it ran: auto is bf16 on native hardware only, and never compiles
    assert (key("train.precision=fp32") == base) != native_bf16("cpu")
    assert (key("train.precision=bf16") == base) == native_bf16("cpu")
    # the lean loop never compiles; TRL's does
    assert key("train.compile=false") == base and key("train.compile=true") == base
    trl = ("train.sft.loop=trl", "train.sft.dagger_rounds=0")
    assert key(*trl) != base and key(*trl, "train.compile=true") != key(*trl)


def test_the_warm_up_key_holds_what_its_dagger_walks_read(tiny_checkpoint: Path) -> None:
    """The rounds' walks read the reply budget and the goal that ends them (and, with a reach cap,
    the evaluation suite): a warm-up built under other values is not reused; without rounds they
    read nothing."""
    from ttt_lab.train.pipeline import sft_key

    def key(*more: str) -> str:
        return sft_key(load(["experiment=tiny_cpu", *more]).cfg, str(tiny_checkpoint))

    base = key()
    assert load(["experiment=tiny_cpu"]).cfg.train.sft.dagger_rounds > 0
    assert key("player.max_new_tokens=7") != base and key("opponent.stop_at_wins=null") != base
    assert key("eval.suite=quick") == base  # no reach cap: the suite is not read
    capped = key("train.sft.dagger_reach_cap=4")
    assert capped != base and key("train.sft.dagger_reach_cap=4", "eval.suite=quick") != capped
    off = key("train.sft.dagger_rounds=0")
    assert key("train.sft.dagger_rounds=0", "player.max_new_tokens=7", "opponent.stop_at_wins=null") == off
