"""Shared pieces of the training stages: quiet libraries, CPU threads, checks, checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ttt_lab.config.schema import Config
from ttt_lab.errors import TttLabError

DONE = "done.json"


class TrainError(TttLabError):
    pass


def quiet() -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from ttt_lab.players.hf import quiet_transformers

    quiet_transformers()
    import warnings

    warnings.filterwarnings("ignore", message=".*past_key_values.*")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(trl|transformers)(\..*)?")
    import datasets

    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", category=UserWarning, module=r"(trl|transformers|torch)(\..*)?")


def torch_threads() -> None:
    import torch

    n = os.environ.get("TTT_LAB_TORCH_THREADS")
    torch.set_num_threads(int(n) if n else max(1, min(os.cpu_count() or 1, 8)))


def check_device(cfg: Config) -> None:
    import torch

    if cfg.model.device.startswith("cuda") and not torch.cuda.is_available():
        raise TrainError(
            f"model.device={cfg.model.device} but this machine has no CUDA device. Use model.device=cpu "
            "(and model=tiny on a CPU machine)."
        )


def check_vllm(cfg: Config) -> None:
    if not cfg.train.use_vllm:
        return
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is None or not torch.cuda.is_available():
        raise TrainError(
            "train.use_vllm=true needs a CUDA GPU and the vllm package (pip install vllm); this machine lacks "
            f"{'vllm' if importlib.util.find_spec('vllm') is None else 'a CUDA device'}. Drop train.use_vllm to "
            "generate with transformers."
        )


def check_reply_budget(tokenizer, max_new_tokens: int) -> None:
    """A move (`<move>8</move>` and the end-of-turn token) must fit in `max_new_tokens`."""
    need = len(tokenizer("<move>8</move>", add_special_tokens=False)["input_ids"]) + 1
    if max_new_tokens < need:
        raise TrainError(
            f"player.max_new_tokens={max_new_tokens} is too small for a move: '<move>8</move>' and the end of "
            f"turn take {need} tokens with this tokenizer. Set player.max_new_tokens to at least {need} "
            "(more when the model reasons in <think>)."
        )


def is_done(folder: Path) -> bool:
    return (folder / DONE).is_file() and (folder / "config.json").is_file()


def mark_done(folder: Path, info: dict[str, Any]) -> None:
    tmp = folder / (DONE + ".partial")
    tmp.write_text(json.dumps(info, indent=2, sort_keys=True))
    tmp.replace(folder / DONE)


def done_info(folder: Path) -> dict[str, Any]:
    return json.loads((folder / DONE).read_text())


def load_model(path: str, cfg: Config):
    """Model and tokenizer from a checkpoint; clear errors for what training cannot use."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, cfg.model.dtype))
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TrainError(f"cannot load the model from {path!r}: {first}. Set model.path to a checkpoint folder "
                         "or a hub id this machine can reach.") from e
    if not getattr(tokenizer, "chat_template", None):
        raise TrainError(f"the tokenizer at {path!r} has no chat template; training needs one to render games. "
                         "Use an instruct/chat checkpoint, or set tokenizer.chat_template and save it.")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    check_reply_budget(tokenizer, cfg.player.max_new_tokens)
    return model.to(cfg.model.device), tokenizer
