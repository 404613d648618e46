"""The embedded default is a measured setting, not a third recipe: tiny_cpu_study at the batch-size
finding's 12 updates a phase, composed to the same config (and so the same trials) as the finding."""

from __future__ import annotations

from dataclasses import asdict

from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import load

FINDING = ["experiment=tiny_cpu_study", "train.phases.0.steps=12", "train.phases.1.steps=12", "train.eval_every=0"]
"""sweeps/batch_size_updates.yaml's overrides, its warm-up seed aside."""


def test_the_default_is_tiny_cpu_study_at_twelve_updates_a_phase() -> None:
    default, finding = load([]), load(FINDING)
    assert asdict(default.cfg) == asdict(finding.cfg)
    assert default.config_hash == finding.config_hash


def test_the_default_differs_from_its_source_only_in_steps_and_evaluations() -> None:
    study, default = asdict(load(["experiment=tiny_cpu_study"]).cfg), asdict(load([]).cfg)
    assert [p["steps"] for p in default["train"]["phases"]] == [12, 12]
    for phase in (*study["train"]["phases"], *default["train"]["phases"]):
        phase.pop("steps")
    study["train"].pop("eval_every"), default["train"].pop("eval_every")
    assert study == default


def test_a_served_player_or_another_model_composes_the_schema_unless_an_experiment_is_named() -> None:
    """The root's preset is the tiny model's: bare moves of six tokens would cut a served or a real
    model's replies short, so those compose the published settings the schema holds."""
    schema = asdict(load(["~experiment"]).cfg)
    for overrides in (["player=openai"], ["model=smollm2-135m"], ["player=hf", "model=lfm2-1.2b"]):
        cfg = load(overrides).cfg
        assert (cfg.env.think, cfg.player.max_new_tokens) == ("optional", 128), overrides
        assert asdict(cfg)["train"] == schema["train"], overrides
    assert load(["player=openai", "experiment=tiny_cpu"]).cfg.player.max_new_tokens == 6
    assert load(["player=hf"]).cfg.env.think == "off"  # a tiny checkpoint: the preset applies


OVERRIDES = ["model=tiny", "model=smollm2-135m", "+model=lfm2-1.2b", "player=openai", "player=hf", "player=minimax",
             "experiment=published", "~experiment", "+experiment=smoke", "model.path=x", "player.kind=openai",
             "batch_size=64", "seed=3"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(OVERRIDES), max_size=5))
def test_the_preset_is_set_aside_exactly_for_another_model_or_a_served_player(overrides: list[str]) -> None:
    from ttt_lab.config.load import conf_dir
    from ttt_lab.config.root_preset import set_aside

    got = set_aside(overrides, conf_dir() / "config.yaml")
    named = any("experiment" in o.split("=")[0] for o in overrides)
    pairs = [o.lstrip("+").split("=") for o in overrides if "=" in o]
    groups = {k: v for k, v in pairs if "." not in k}
    want = not named and (groups.get("model", "tiny") != "tiny" or groups.get("player") == "openai")
    assert got == (["~experiment"] if want else [])
