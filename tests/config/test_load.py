import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import ConfigError, load
from ttt_lab.config.overrides import OverrideError, expand_star, leaf_paths
from ttt_lab.errors import InvalidSetting


def test_defaults_compose_to_the_schema() -> None:
    loaded = load(["~experiment"])  # the root's preset set aside (tests/config/test_presets.py has it)
    assert loaded.cfg.opponent.tie_break == "random"
    assert loaded.cfg.env.penalty.mode == "flat"
    assert len(loaded.cfg.train.phases) == 1
    assert loaded.tree["tracking"]["uri"].startswith("sqlite:///")


def test_published_experiment_encodes_the_recipe() -> None:
    cfg = load(["experiment=published"]).cfg
    p1, p2 = cfg.train.phases
    assert (p1.batch_size, p1.num_generations, p1.steps, p1.learning_rate) == (256, 8, 600, 5e-5)
    assert (p1.p_min, p1.p_max, p1.num_strata) == (0.2, 0.7, 32)
    assert (p2.batch_size, p2.steps, p2.temperature, p2.learning_rate) == (480, 400, 1.25, 3e-5)
    assert (p2.p_min, p2.p_max, p2.num_strata) == (0.0, 0.25, 60)
    assert cfg.model.lora.r == 8
    assert cfg.train.sft.num_games == 200
    assert cfg.opponent.scoring == "fast"


@pytest.mark.parametrize(
    ("ablation", "key", "value"),
    [
        ("no_stratify", "dataset.sampling", "iid"),
        ("unseeded_opponent", "opponent.seeding", "per_game"),
        ("first_tiebreak_opponent", "opponent.tie_break", "first"),
        ("hard_invalid", "env.penalty.mode", "forfeit"),
        ("per_move_penalty", "env.penalty.mode", "per_move"),
        ("no_think", "env.think", "off"),
    ],
)
def test_ablation_presets(ablation: str, key: str, value: str) -> None:
    tree = load(["~experiment", f"ablation={ablation}"]).tree
    section, _, leaf = key.rpartition(".")
    node = tree
    for part in section.split("."):
        node = node[part]
    assert node[leaf] == value
    assert load(["~experiment"]).tree != tree


def test_ablations_combine() -> None:
    cfg = load(["ablation=[no_think,hard_invalid]"]).cfg
    assert (cfg.env.think, cfg.env.penalty.mode) == ("off", "forfeit")


def test_short_names_resolve_through_aliases_and_unique_leaves() -> None:
    loaded = load(["batch_size=256", "experiment=published", "max_model_turns=5", "seed=3"])
    assert [p.batch_size for p in loaded.cfg.train.phases] == [256, 256]
    assert loaded.cfg.env.max_model_turns == 5
    assert loaded.cfg.seed == 3
    assert "train.phases.1.batch_size=256" in loaded.resolved_overrides
    assert load(["train.phases.0.batch_size=128"]).cfg.train.phases[0].batch_size == 128


def test_ambiguous_short_name_lists_candidates() -> None:
    with pytest.raises(OverrideError) as e:
        load(["name=x"])
    assert "model.name" in str(e.value) and "train.phases.*.name" in str(e.value)
    assert "ambiguous" in str(e.value)
    assert "eval.suites" not in str(e.value)


def test_unknown_short_name_suggests() -> None:
    with pytest.raises(OverrideError, match=r"Did you mean: .*tie_break"):
        load(["tie_brake=first"])


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["opponent=nope"], "Choose one of: exploiter, minimax, minimax_fast, minimax_first, random"),
        (["env.nokey=1"], "env.nokey"),
        (["env.max_model_turns=abc"], "could not be converted to Integer"),
        (["experiment=nope"], "published"),
    ],
)
def test_composition_errors_are_one_paragraph(overrides: list[str], words: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(overrides)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([[], ["experiment=tiny_cpu"], ["experiment=tiny_cpu_long"]]), st.integers(0, 6))
def test_an_override_of_a_phase_the_list_lacks_says_how_many_there_are(preset: list[str], index: int) -> None:
    phases = len(load(preset).cfg.train.phases)
    override = f"train.phases.{index}.steps=3"
    if index < phases:
        assert load([*preset, override]).cfg.train.phases[index].steps == 3
        return
    with pytest.raises(ConfigError) as e:
        load([*preset, override])
    text = str(e.value)
    assert f"entry {index} of `train.phases`" in text and f"has {phases} entr" in text and "\n" not in text


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (["~experiment", "dataset.p_min=0.9"], "dataset.p_min"),
        (["env.max_model_turns=0"], "env.max_model_turns"),
        (["tie_break=middle"], "opponent.tie_break"),
        (["batch_size=60"], "train.phases.0.batch_size"),
        (["eval.suite=nope"], "eval.suite"),
        (["env.penalty.amount=-1"], "env.penalty.amount"),
        (["train.phases.0.p_min=0.8", "train.phases.0.p_max=0.2"], "train.phases.0.p_min"),
        (["experiment=tiny_cpu_long", "train.phases.1.p_min=0.5", "train.phases.1.p_max=0.3"], "train.phases.1.p_min"),
        (["~experiment", "dataset.p_max=0.1", "dataset.p_min=0.0", "train.phases.0.p_min=0.5"], "train.phases.0.p_min"),
        (["~experiment", "dataset.p_min=0.6", "train.phases.0.p_max=0.4"], "dataset.p_min"),
        (["seed=-1"], "seed"),
        (["seed=4294967296"], "seed"),
        (["train.sft.epochs=0"], "train.sft.epochs"),
        (["train.sft.batch_size=0"], "train.sft.batch_size"),
        (["train.sft.learning_rate=-0.1"], "train.sft.learning_rate"),
    ],
)
def test_values_out_of_range_fail_before_work(overrides: list[str], field: str) -> None:
    with pytest.raises(InvalidSetting) as e:
        load(overrides)
    assert e.value.field == field


def test_config_hash_ignores_tracking_and_follows_settings() -> None:
    a = load([]).config_hash
    assert load(["tracking.experiment=other"]).config_hash == a
    assert load(["seed=1"]).config_hash != a
    assert load([]).config_hash == a


def test_leaf_paths_and_star_expansion() -> None:
    tree = {"a": {"b": 1, "c": [{"d": 1}, {"d": 2, "e": 3}]}}
    assert leaf_paths(tree) == ["a.b", "a.c.*.d", "a.c.*.e"]
    assert expand_star("a.c.*.d", tree) == ["a.c.0.d", "a.c.1.d"]


def test_values_read_from_the_environment_are_kept_out_of_what_is_logged(monkeypatch) -> None:
    from ttt_lab.redact import redact

    monkeypatch.setenv("TTT_TEST_SECRET_MODEL", "tok-5ecret-9f3e")
    loaded = load(["player=openai", "player.served_model=${oc.env:TTT_TEST_SECRET_MODEL}"])
    assert loaded.cfg.player.served_model == "tok-5ecret-9f3e"  # the command itself gets the value
    assert loaded.tree["player"]["served_model"] == "tok-5ecret-9f3e"
    assert loaded.logged_tree["player"]["served_model"] == "***"
    assert "player.served_model" in loaded.from_env and "home" not in loaded.from_env
    assert loaded.logged_tree["home"] == loaded.tree["home"]  # TTT_LAB_HOME is a setting, not a secret
    assert redact("OpenAIPlayer('http://x/v1', 'tok-5ecret-9f3e')") == "OpenAIPlayer('http://x/v1', '***')"


def test_tiny_cpu_long_is_tiny_cpu_two_phases_with_more_rl() -> None:
    """tiny_cpu_long shares tiny_cpu_two_phases' warm-up (one cached SFT checkpoint serves both),
    its environment and data, and plays more RL games in each of its phases and one more phase;
    tiny_cpu's environment and data are theirs too."""

    def games(cfg) -> list[int]:
        return [p.steps * p.batch_size for p in cfg.train.phases]

    short, long = load(["experiment=tiny_cpu_two_phases"]).cfg, load(["experiment=tiny_cpu_long"]).cfg
    assert long.train.sft == short.train.sft and long.env == short.env and long.dataset == short.dataset
    tiny = load(["experiment=tiny_cpu"]).cfg
    assert tiny.env == short.env and tiny.dataset == short.dataset and tiny.model == short.model
    assert len(long.train.phases) == len(short.train.phases) + 1
    assert all(g_long > g_short for g_long, g_short in zip(games(long), games(short), strict=False))
    assert [p.name for p in long.train.phases[:2]] == [p.name for p in short.train.phases]


@given(st.one_of(st.none(), st.floats(0, 1)), st.one_of(st.none(), st.floats(0, 1)), st.floats(0, 1), st.floats(0, 1))
def test_a_phase_range_is_refused_exactly_when_training_would_use_it_reversed(lo, hi, d_lo, d_hi) -> None:
    """A phase's unset end is `dataset.*`'s; the range training would use is checked at load."""
    from dataclasses import replace

    from ttt_lab.config.schema import Config, PhaseConfig, validate

    d_lo, d_hi = min(d_lo, d_hi), max(d_lo, d_hi)
    cfg = Config()
    cfg = replace(cfg, dataset=replace(cfg.dataset, p_min=d_lo, p_max=d_hi),
                  train=replace(cfg.train, phases=[PhaseConfig(p_min=lo, p_max=hi)]))
    used = (d_lo if lo is None else lo, d_hi if hi is None else hi)
    if used[0] > used[1]:
        with pytest.raises(InvalidSetting, match=r"other end of train\.phases\.0"):
            validate(cfg)
    else:
        validate(cfg)
