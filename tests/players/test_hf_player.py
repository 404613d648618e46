from pathlib import Path

import pytest

from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.hf import HFPlayer, ModelLoadError


def test_hf_player_plays_complete_games_from_a_saved_checkpoint(tiny_checkpoint: Path) -> None:
    player = HFPlayer(str(tiny_checkpoint), max_new_tokens=8, batch_size=4)
    examples = make_dataset(DatasetConfig(size=6, model_symbol="alternate"), 0)
    records = play_games(player, examples, EnvConfig(max_model_turns=3), MinimaxOpponent())
    assert len(records) == 6
    assert all(r.outcome is not None and 1 <= r.model_turns <= 3 for r in records)
    assert all(r.messages[2]["role"] == "assistant" for r in records)


def test_sampling_is_reproducible_for_a_seed_and_really_samples(tiny_checkpoint: Path) -> None:
    examples = make_dataset(DatasetConfig(size=8), 0)

    def replies(temperature: float, seed: int) -> list[str]:
        player = HFPlayer(str(tiny_checkpoint), max_new_tokens=6, temperature=temperature, seed=seed)
        return [r.messages[2]["content"] for r in play_games(player, examples, EnvConfig(max_model_turns=1),
                                                              MinimaxOpponent())]

    sampled = replies(1.0, 3)
    assert sampled == replies(1.0, 3)
    assert sampled != replies(1.0, 4), "another seed draws other replies"
    assert sampled != replies(0.0, 3), "temperature 1 is not greedy decoding"


def test_a_sampling_player_leaves_the_global_rng_alone(tiny_checkpoint: Path) -> None:
    """A training's periodic evaluation samples through a player: the training's RNG stream must
    not depend on it (neither reseeded on creation nor advanced by sampling)."""
    import torch

    examples = make_dataset(DatasetConfig(size=4), 0)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    player = HFPlayer(str(tiny_checkpoint), max_new_tokens=6, temperature=1.0, seed=7)
    play_games(player, examples, EnvConfig(max_model_turns=1), MinimaxOpponent())
    assert torch.equal(torch.rand(3), expected)


def test_missing_checkpoint_is_explained(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="cannot load the model"):
        HFPlayer(str(tmp_path / "nothing-here"))


def test_a_local_model_path_that_is_no_checkpoint_is_named_before_transformers_reads_it(
        tmp_path: Path, tiny_checkpoint: Path) -> None:
    """transformers reads a missing local path as a malformed hub id; ttt-lab says what is wrong."""
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path

    def resolve(path: str) -> str:
        return resolve_model_path(load([f"model.path={path}"]).cfg)

    with pytest.raises(ModelLoadError, match=r"'/no/such/folder' does not exist on this machine"):
        resolve("/no/such/folder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match=r"holds no config\.json"):
        resolve(str(tmp_path / "empty"))
    assert resolve(str(tiny_checkpoint)) == str(tiny_checkpoint)
    assert resolve("org/model-name") == "org/model-name"  # a hub id is left to transformers


@pytest.mark.parametrize(("precision", "native", "bf16"),
                         [("bf16", False, True), ("fp32", True, False), ("auto", True, True), ("auto", False, False)])
def test_the_players_forward_passes_run_at_the_asked_precision(tiny_checkpoint: Path, precision: str, native: bool,
                                                               bf16: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """train.precision reaches `ttt-lab eval`'s player (bf16 autocast) by the training's rule: auto
    is bf16 where the device computes it natively (AVX512-BF16 or AMX on a CPU), else fp32."""
    import torch

    from ttt_lab.config.load import load
    from ttt_lab.engine import precision as engine_precision

    monkeypatch.setattr(engine_precision, "native_bf16", lambda device: native)
    cfg = load(["player=hf", f"model.path={tiny_checkpoint}", f"train.precision={precision}",
                "player.max_new_tokens=2"]).cfg
    player = HFPlayer.from_config(cfg)
    assert player.bf16 == bf16
    seen: list[bool] = []
    forward = player.model.forward

    def spy(*a, **k):
        seen.append(torch.is_autocast_enabled("cpu"))
        return forward(*a, **k)

    player.model.forward = spy
    play_games(player, make_dataset(DatasetConfig(size=1), 0), EnvConfig(max_model_turns=1), MinimaxOpponent())
    assert seen and set(seen) == {bf16}


@pytest.mark.parametrize(("setting", "kernel"), [("auto", "sdpa"), ("sdpa", "sdpa"), ("eager", "eager")])
def test_the_player_loads_the_attention_kernel_model_attention_names(tiny_checkpoint: Path, setting: str,
                                                                     kernel: str) -> None:
    """model.attention reaches `ttt-lab eval`'s player; auto leaves transformers' default (SDPA)."""
    from ttt_lab.config.load import load

    cfg = load(["player=hf", f"model.path={tiny_checkpoint}", f"model.attention={setting}"]).cfg
    assert HFPlayer.from_config(cfg).model.config._attn_implementation == kernel
