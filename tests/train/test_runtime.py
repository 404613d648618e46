"""The runtime (precision, compile, attention, threads) is resolved once per training and every
step that loads, trains or plays the model uses the one it is handed, not its own reading of the
config."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttt_lab.train import runtime as runtime_module
from ttt_lab.train.runtime import Runtime, resolve

from .conftest import cfg_for


def test_resolve_reads_the_config_and_the_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTT_LAB_TORCH_THREADS", "3")
    got = resolve(cfg_for(tmp_path, "train.precision=bf16", "train.compile=true", "model.attention=sdpa"))
    assert got == Runtime(device="cpu", bf16=True, compile=True, attention="sdpa", threads=3)
    fp32 = resolve(cfg_for(tmp_path, "train.precision=fp32", "train.compile=false"))
    assert (fp32.bf16, fp32.compile, fp32.attention) == (False, False, "eager")


def test_the_steps_use_the_runtime_they_are_handed(tmp_path: Path, tiny_checkpoint: Path) -> None:
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.trainer_args import grpo_args

    cfg = cfg_for(tmp_path, "train.precision=fp32", "train.compile=false", "model.attention=eager")
    handed = Runtime(device="cpu", bf16=True, compile=True, attention="sdpa", threads=1)
    args = grpo_args(cfg, cfg.train.phases[0], 1, tmp_path, 60, runtime=handed)
    assert args.bf16 and args.torch_compile
    assert not grpo_args(cfg, cfg.train.phases[0], 1, tmp_path, 60).bf16  # without one: the config's
    model, _ = load_model(str(tiny_checkpoint), cfg, runtime=handed)
    assert model.config._attn_implementation == "sdpa"


def test_a_training_resolves_its_runtime_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole training (warm-up, its evaluation, an RL phase, the final evaluation) decides
    precision and compile once: each decision reads the machine, and the steps must agree."""
    from ttt_lab import api

    calls: list[str] = []
    real = runtime_module.use_bf16

    def counted(cfg, say=None):
        calls.append(cfg.model.device)
        return real(cfg, say)

    monkeypatch.setattr(runtime_module, "use_bf16", counted)
    monkeypatch.setenv("TTT_LAB_HOME", str(tmp_path / "runs"))
    monkeypatch.setenv("TTT_LAB_TORCH_THREADS", "1")
    api.train(["experiment=smoke", "tracking.enabled=false", "train.sft.enabled=true", "train.sft.num_games=8",
               "train.sft.epochs=1"])
    assert calls == ["cpu"]
