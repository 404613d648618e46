"""The learning-rate schedulers a config may name: transformers' own, and only those the loops can step."""
import copy
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import load
from ttt_lab.config.schema import Config, validate
from ttt_lab.config.sft_schema import DAGGER_SCHEDULERS, LR_SCHEDULERS
from ttt_lab.errors import InvalidSetting

CHOICES = r"lr_scheduler.*constant \| constant_with_warmup \| linear"


def _steps_alone(name: str) -> bool:
    """Whether transformers builds `name` from a warm-up and a step count and steps it without a metric,
    as the lean loop and the trainers do."""
    import torch
    from transformers import get_scheduler

    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    try:
        sched = get_scheduler(name, opt, num_warmup_steps=2, num_training_steps=10)
        for _ in range(3):
            opt.step()
            sched.step()
    except (TypeError, ValueError):
        return False
    return True


@lru_cache(maxsize=1)
def _defaults() -> Config:
    return load(["~experiment"]).cfg


def _with(name: str, *, phase: bool) -> Config:
    cfg = copy.deepcopy(_defaults())
    (cfg.train.phases[0] if phase else cfg.train.sft).lr_scheduler = name
    return cfg


def test_the_names_are_exactly_transformers_schedulers_that_step_alone() -> None:
    from transformers import SchedulerType

    assert {s.value for s in SchedulerType if _steps_alone(s.value)} == set(LR_SCHEDULERS)
    assert set(DAGGER_SCHEDULERS) <= set(LR_SCHEDULERS)


@pytest.mark.parametrize("phase", [False, True])
def test_every_known_scheduler_passes(phase: bool) -> None:
    for name in LR_SCHEDULERS:
        validate(_with(name, phase=phase))


@settings(max_examples=50, deadline=None)
@given(name=st.text(min_size=1, max_size=24).filter(lambda n: n not in LR_SCHEDULERS), phase=st.booleans())
def test_an_unknown_scheduler_is_refused_naming_the_choices(name: str, phase: bool) -> None:
    with pytest.raises(InvalidSetting, match=CHOICES):
        validate(_with(name, phase=phase))


@pytest.mark.parametrize("key", ["train.sft.lr_scheduler", "train.phases.0.lr_scheduler"])
def test_loading_stops_at_an_unknown_scheduler(key: str) -> None:
    with pytest.raises(InvalidSetting, match=CHOICES):
        load(["~experiment", f"{key}=warmup"])
