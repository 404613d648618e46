"""A configuration with neither the SFT warm-up nor an RL phase would evaluate the untrained
model and report it as the training's result: it is refused before any work, pointing at
`ttt-lab eval`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.config.load import load
from ttt_lab.errors import InvalidSetting

NOTHING = ["experiment=smoke", "phase=sft"]
"""smoke has no warm-up; phase=sft leaves no RL phase."""


def test_a_configuration_that_trains_nothing_is_refused_by_name() -> None:
    with pytest.raises(InvalidSetting) as e:
        load(NOTHING)
    assert e.value.field == "train.phases" and "ttt-lab eval" in str(e.value)


@pytest.mark.parametrize("overrides", [["experiment=smoke"], ["phase=sft"], ["experiment=smoke", "phase=two_stage"]])
def test_a_warm_up_alone_or_an_rl_phase_alone_is_a_training(overrides: list[str]) -> None:
    cfg = load(overrides).cfg
    assert cfg.train.sft.enabled or cfg.train.phases


def test_train_refuses_it_with_one_paragraph_and_exit_2_writing_nothing(home: Path) -> None:
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    out = cli("train", *NOTHING, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    err = out.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "would train nothing" in err and "ttt-lab eval" in err
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
