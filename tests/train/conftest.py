from pathlib import Path

import pytest

from ttt_lab.config.load import load

SMALL = ["env.think=off", "player.max_new_tokens=6", "env.max_model_turns=5", "train.sft.teacher_p_random=0.0",
         "train.sft.num_games=120",
         "train.sft.batch_size=16", "batch_size=16", "num_generations=4", "lr=1e-3", "tracking.enabled=false"]


def cfg_for(home: Path, *extra: str):
    return load([*SMALL, f"home={home}", *extra]).cfg


@pytest.fixture(scope="session")
def sft_run(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A briefly warmed-up model: it plays legal moves often enough for rewards to differ."""
    from ttt_lab.train.sft import run_sft

    home = tmp_path_factory.mktemp("sft")
    cfg = cfg_for(home, "train.sft.epochs=10", "train.sft.learning_rate=1e-2")
    return home / "sft", run_sft(cfg, str(tiny_checkpoint), home / "sft")
