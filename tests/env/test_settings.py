import pytest

from ttt_lab.env.settings import EnvConfig, PenaltyConfig, RewardConfig
from ttt_lab.errors import InvalidSetting


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        (EnvConfig(max_model_turns=0), "env.max_model_turns", 0),
        (EnvConfig(max_model_turns=2.5), "env.max_model_turns", 2.5),
        (EnvConfig(think="always"), "env.think", "always"),
        (EnvConfig(penalty=PenaltyConfig(mode="harsh")), "env.penalty.mode", "harsh"),
        (EnvConfig(penalty=PenaltyConfig(amount=-0.1)), "env.penalty.amount", -0.1),
        (EnvConfig(penalty=PenaltyConfig(cap=-1)), "env.penalty.cap", -1),
        (EnvConfig(reward=RewardConfig(win="1")), "env.reward.win", "1"),
    ],
)
def test_bad_env_settings_name_field_value_and_allowed(env: EnvConfig, field: str, value) -> None:
    with pytest.raises(InvalidSetting) as e:
        env.validate()
    assert e.value.field == field
    msg = str(e.value)
    assert field in msg and repr(value) in msg and "Allowed:" in msg
    assert "\n" not in msg


def test_defaults_are_valid() -> None:
    assert EnvConfig().validate() == EnvConfig()
