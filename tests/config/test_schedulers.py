"""The learning-rate schedulers a config may name: transformers' own, and only those the loops can step."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import load
from ttt_lab.config.sft_schema import DAGGER_SCHEDULERS, LR_SCHEDULERS
from ttt_lab.errors import InvalidSetting


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


def test_the_names_are_exactly_transformers_schedulers_that_step_alone() -> None:
    from transformers import SchedulerType

    assert {s.value for s in SchedulerType if _steps_alone(s.value)} == set(LR_SCHEDULERS)
    assert set(DAGGER_SCHEDULERS) <= set(LR_SCHEDULERS)


@pytest.mark.parametrize("key", ["train.sft.lr_scheduler", "train.phases.0.lr_scheduler"])
def test_every_known_scheduler_loads(key: str) -> None:
    for name in LR_SCHEDULERS:
        load(["~experiment", f"{key}={name}"])


# `null` is Hydra's None, which a non-optional field refuses while composing (ConfigError), before validation
@settings(max_examples=20, deadline=None)
@given(name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=24)
       .filter(lambda n: n not in LR_SCHEDULERS and n != "null"))
def test_an_unknown_scheduler_stops_at_load_naming_the_choices(name: str) -> None:
    for key in ("train.sft.lr_scheduler", "train.phases.0.lr_scheduler"):
        with pytest.raises(InvalidSetting, match=r"lr_scheduler.*constant \| constant_with_warmup \| linear"):
            load(["~experiment", f"{key}={name}"])
