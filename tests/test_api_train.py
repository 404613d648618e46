"""`ttt_lab.api.train` in this process (the session's `smoke_trained`): what its `TrainResult` says
matches what it left on disk and in the tracking store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SMOKE_TRAINING
from ttt_lab import api
from ttt_lab.api import TrainResult
from ttt_lab.evaluation.exact import EXPLOITER
from ttt_lab.timing import PHASES, PREFIX
from ttt_lab.train.evaluate import TRAINING_SUITE


def test_train_returns_its_checkpoint_final_rates_and_run(smoke_trained: TrainResult, smoke_home: Path) -> None:
    result = smoke_trained
    loaded = api.load_config(SMOKE_TRAINING)
    assert result.config_hash == loaded.config_hash
    # the last phase's finished checkpoint, a transformers model folder with its weights
    assert result.checkpoint == smoke_home / "train" / result.config_hash / f"0-{loaded.cfg.train.phases[-1].name}"
    assert (result.checkpoint / "done.json").is_file() and (result.checkpoint / "config.json").is_file()
    assert (result.checkpoint / "model.safetensors").stat().st_size > 0
    from ttt_lab.train.checkpoints import load_model

    model, _ = load_model(str(result.checkpoint), loaded.cfg)
    assert sum(p.numel() for p in model.parameters()) > 0

    # the final policy against every opponent of the training suite (the best response too when exact)
    names = [s.opponent for s in result.final]
    assert names[:len(TRAINING_SUITE)] == [e.name for e in TRAINING_SUITE] and set(names[len(TRAINING_SUITE):]) <= {
        EXPLOITER}
    for s in result.final:
        rates = s.outcome_rates()
        assert set(rates) == {"win", "draw", "loss"}
        for rate, lo, hi in rates.values():
            assert 0.0 <= lo <= rate <= hi <= 1.0, (s.opponent, rates)
        unexplored = getattr(s, "unexplored", 0.0)  # exact: the probability its walk left out
        assert sum(r for r, _, _ in rates.values()) + unexplored == pytest.approx(1.0), (s.opponent, rates)
        assert s.games > 0
        assert result.metrics[f"final/{s.opponent}/draw_rate"] == rates["draw"][0]
    assert result.sft is None and result.gains == []  # smoke has no warm-up to compare with
    assert result.seconds > 0


def test_the_trained_run_is_logged_with_its_rates_and_where_its_time_went(smoke_trained: TrainResult,
                                                                           smoke_home: Path) -> None:
    import mlflow

    assert smoke_trained.run_id is not None
    run = mlflow.MlflowClient(f"sqlite:///{smoke_home}/mlflow.db").get_run(smoke_trained.run_id)
    tags, metrics = run.data.tags, run.data.metrics
    assert run.info.status == "FINISHED"
    assert tags["ttt.kind"] == "train" and tags["ttt.config_hash"] == smoke_trained.config_hash
    assert tags["ttt.overrides"] == " ".join(SMOKE_TRAINING) and tags["ttt.torch_threads"] == "1"
    assert Path(tags["ttt.checkpoint"]) == smoke_trained.checkpoint.resolve()
    for key, value in smoke_trained.metrics.items():  # final/<opponent>/… is logged as eval/<opponent>/…
        assert metrics["eval/" + key.removeprefix("final/")] == pytest.approx(value), key
    parts = {p: metrics[f"{PREFIX}{p}_s"] for p in PHASES}
    assert sum(parts.values()) == pytest.approx(metrics[f"{PREFIX}total_s"], abs=0.01)
    assert parts["rl"] > 0 and parts["eval"] > 0
    assert parts["warm_up"] == 0 and parts["audit"] == 0  # no SFT in smoke; a training audits nothing
