"""Which arithmetic a model's forward passes run: bf16 autocast where the device computes bf16
natively (`train.precision`) and the attention kernel (`model.attention`), the rules the training,
its rollouts and `ttt-lab eval` share."""

from __future__ import annotations

from collections.abc import Callable

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


def attention(cfg: Config) -> str:
    """The attention kernel `model.attention` names (auto: eager on a CPU, sdpa elsewhere)."""
    if cfg.model.attention != "auto":
        return cfg.model.attention
    return "eager" if cfg.model.device == "cpu" else "sdpa"


def autocast(bf16: bool, device: str):
    """bf16 autocast on `device` when `bf16`, else a no-op context."""
    import contextlib

    import torch

    if not bf16:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16)
