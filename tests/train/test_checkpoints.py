import re

import pytest

from ttt_lab.engine.precision import attention
from ttt_lab.errors import InvalidSetting
from ttt_lab.train.checkpoints import load_model

from .conftest import cfg_for


@pytest.mark.parametrize(("setting", "device", "kernel"), [("auto", "cpu", "eager"), ("auto", "cuda", "sdpa"),
                                                           ("sdpa", "cpu", "sdpa"), ("eager", "cuda", "eager")])
def test_the_attention_kernel_is_the_one_model_attention_names(tmp_path, setting, device, kernel) -> None:
    assert attention(cfg_for(tmp_path, f"model.attention={setting}", f"model.device={device}")) == kernel


@pytest.mark.parametrize("setting", ["auto", "sdpa"])
def test_a_loaded_model_runs_the_chosen_kernel(tiny_checkpoint, tmp_path, setting) -> None:
    model, _ = load_model(str(tiny_checkpoint), cfg_for(tmp_path, f"model.attention={setting}"))
    assert model.config._attn_implementation == ("eager" if setting == "auto" else "sdpa")


def test_an_unknown_attention_kernel_is_refused_with_the_choices(tmp_path) -> None:
    with pytest.raises(InvalidSetting, match=re.escape("'model.attention': 'flash'. Allowed: auto | eager | sdpa")):
        cfg_for(tmp_path, "model.attention=flash")
