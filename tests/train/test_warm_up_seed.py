"""`train.sft.seed`: one warm-up held fixed while `seed` varies RL."""

from pathlib import Path

import pytest

from ttt_lab.config.load import ConfigError, load
from ttt_lab.config.schema import warm_up_seed
from ttt_lab.errors import InvalidSetting
from ttt_lab.train.pipeline import sft_key


def _key(home: Path, *extra: str) -> str:
    from ttt_lab.players.hf import resolve_model_path

    cfg = load([f"home={home}", "tracking.enabled=false", "experiment=smoke", "train.sft.enabled=true", *extra]).cfg
    return sft_key(cfg, resolve_model_path(cfg))


def test_the_warm_up_follows_its_own_seed_when_set(tmp_path: Path) -> None:
    assert _key(tmp_path, "seed=1") != _key(tmp_path, "seed=2")  # by default each seed warms up its own
    assert _key(tmp_path, "seed=1", "train.sft.seed=7") == _key(tmp_path, "seed=2", "train.sft.seed=7")
    assert _key(tmp_path, "seed=7") == _key(tmp_path, "seed=3", "train.sft.seed=7")
    cfg = load(["seed=4", "train.sft.seed=9", "tracking.enabled=false"]).cfg
    assert warm_up_seed(cfg) == 9 and warm_up_seed(load(["seed=4", "tracking.enabled=false"]).cfg) == 4


@pytest.mark.parametrize("bad", ["-1", "4294967296", "true"])
def test_a_warm_up_seed_out_of_range_is_refused(bad: str) -> None:
    with pytest.raises((InvalidSetting, ConfigError)) as e:
        load([f"train.sft.seed={bad}"])
    assert "train.sft.seed" in str(e.value)
