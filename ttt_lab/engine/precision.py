"""Which arithmetic a model's forward passes run: bf16 autocast where the device computes bf16
natively (`train.precision`) and the attention kernel (`model.attention`). The one place these
rules are decided: the training, its rollouts, the players and `ttt-lab eval` ask here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, overload

from ttt_lab.config.schema import Config


def native_bf16(device: str) -> bool:
    """Whether `device` computes bf16 matmuls in hardware (emulated bf16 is slower than fp32)."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def use_bf16(cfg: Config, say: Callable[[str], None] | None = None) -> bool:
    """Whether training and rollouts run under bf16 autocast (`train.precision`); `say` hears
    the one line explaining a fallback to fp32."""
    if cfg.model.dtype == "bfloat16" or cfg.train.precision == "bf16":
        return True
    if cfg.train.precision == "fp32":
        return False
    if native_bf16(cfg.model.device):
        return True
    if say is not None:
        say(f"train.precision=auto: {cfg.model.device} has no native bf16 (no AVX512-BF16/AMX on this CPU, or no "
            "bf16 GPU): training in fp32 (train.precision=bf16 forces emulated bf16, usually slower)")
    return False


Use = Literal["training", "playing"]
"""What the forward passes are for: training (whole batches of games, forward and backward), or
playing (the engine decoding games token by token: players, evaluation, rollouts of a player)."""


@overload
def attention(cfg: Config, use: Literal["training"] = "training") -> str: ...


@overload
def attention(cfg: Config, use: Literal["playing"]) -> str | None: ...


def attention(cfg: Config, use: Use = "training") -> str | None:
    """The attention kernel (transformers' `attn_implementation`) for `use`: the one
    `model.attention` names, or for auto, the one measured faster for that use
    (docs/benchmarks.md): training on a CPU runs eager (its small heads over short games
    compute faster without SDPA's kernel), training elsewhere SDPA; playing keeps transformers'
    default (None: SDPA where the model supports it), which plays whole games through the
    engine faster than eager even where eager decodes a single step faster."""
    if cfg.model.attention != "auto":
        return cfg.model.attention
    if use == "playing":
        return None
    return "eager" if cfg.model.device == "cpu" else "sdpa"


def autocast(bf16: bool, device: str):
    """bf16 autocast on `device` when `bf16`, else a no-op context."""
    import contextlib

    import torch

    if not bf16:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16)
