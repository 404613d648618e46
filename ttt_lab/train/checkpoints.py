"""Checkpoints of the training stages: loading one for training, publishing one, and finding
the trainer checkpoint an interrupted RL phase resumes from.

A stage trains into `<out>.work/`; `publish` saves the model there, writes the done marker
last and renames the folder to `<out>`, so a folder without `.work` is always complete."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ttt_lab import log
from ttt_lab.config.schema import Config
from ttt_lab.engine.precision import attention
from ttt_lab.train import distributed
from ttt_lab.train.runtime import Runtime, TrainError

LOG = log.get("train")

DONE = "done.json"


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
    from ttt_lab import atomic

    atomic.write_text(folder / DONE, json.dumps(info, indent=2, sort_keys=True))


def done_info(folder: Path) -> dict[str, Any]:
    return json.loads((folder / DONE).read_text())


def checkpoint_digest(path: str) -> str:
    """A checkpoint's content hash: every file of a local folder (name and bytes; files over
    64 MiB by size and their first and last MiB), or the hub id itself."""
    import hashlib

    folder = Path(path)
    if not folder.is_dir():
        return f"hub:{path}"
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        size = f.stat().st_size
        with f.open("rb") as fh:
            if size <= 64 << 20:
                h.update(fh.read())
            else:
                h.update(str(size).encode() + fh.read(1 << 20))
                fh.seek(-(1 << 20), 2)
                h.update(fh.read())
    return h.hexdigest()


def publish(model, tokenizer, work: Path, out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Save `model` (LoRA adapters merged) into `work`, drop the trainer's state, mark it done
    and move it to `out`; returns `info`."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(str(work))
    tokenizer.save_pretrained(str(work))
    shutil.rmtree(work / "trainer", ignore_errors=True)
    mark_done(work, info)
    if out.exists():
        shutil.rmtree(out)
    work.rename(out)
    return info


def load_model(path: str, cfg: Config, *, runtime: Runtime | None = None):
    """Model and tokenizer from a checkpoint, on `cfg.model.device` with `runtime`'s attention
    kernel (resolved from `cfg` when not given); clear errors for what training cannot use."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kernel = runtime.attention if runtime else attention(cfg)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, cfg.model.dtype),
                                                     attn_implementation=kernel)
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
    # transformers declares PreTrainedModel.to with @wraps(nn.Module.to), so mypy reads the bound
    # method as the unbound one and expects the model as its first argument
    return model.to(cfg.model.device), tokenizer  # type: ignore[arg-type]


WEIGHTS = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin")


def complete(checkpoint: Path) -> bool:
    """A trainer checkpoint that can be resumed from: weights, optimizer, scheduler and a
    readable trainer state (written last). A save cut short by a kill or a full disk lacks one."""
    try:
        json.loads((checkpoint / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return (any((checkpoint / w).is_file() for w in WEIGHTS) and (checkpoint / "optimizer.pt").is_file()
            and (checkpoint / "scheduler.pt").is_file())


def last_checkpoint(folder: Path, say: Callable[[str], None] = LOG.info) -> Path | None:
    """The newest complete trainer checkpoint; incomplete newer ones are set aside, saying so
    (as `checkpoint-N.incomplete`, which later calls and the other ranks pass over)."""
    cps = sorted((p for p in folder.glob("checkpoint-*") if p.name.split("-", 1)[1].isdigit()),
                 key=lambda p: int(p.name.split("-")[1])) if folder.is_dir() else []
    for cp in reversed(cps):
        if complete(cp):
            return cp
        aside = cp.with_name(cp.name + ".incomplete")
        shutil.rmtree(aside, ignore_errors=True)
        cp.rename(aside)
        say(f"{cp} is incomplete (an interrupted save): set aside as {aside.name}; resuming from the one before"
            + ("" if cp != cps[0] else " it, or restarting the phase if there is none"))
    return None


def resume_point(work: Path, say: Callable[[str], None]) -> Path | None:
    """The trainer checkpoint to resume from: rank 0 looks (setting incomplete ones aside),
    then the other ranks find the same one."""
    distributed.barrier()
    last = last_checkpoint(work / "trainer", say) if distributed.is_main() else None
    distributed.barrier()
    return last if distributed.is_main() else last_checkpoint(work / "trainer", lambda _: None)
