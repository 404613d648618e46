"""The training process and its machine: quiet libraries, CPU threads, device and vLLM checks."""

from __future__ import annotations

import os

from ttt_lab.config.schema import Config
from ttt_lab.errors import TttLabError


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
