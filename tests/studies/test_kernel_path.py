"""Where a run ran: the kernel path a training records and what `reproduce` makes of another one."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.studies.reproduce import CROSS_PATH_TOLERANCE, Comparison, path_difference
from ttt_lab.train.runtime import kernel_path


def test_the_path_names_torchs_capability_bf16_amx_and_kernel_caps(monkeypatch) -> None:
    import torch

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    path = kernel_path()
    assert path["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert path["avx512_bf16"] in ("true", "false") and path["amx"] in ("true", "false")
    assert path["onednn_max_cpu_isa"] == "AVX2"


def test_another_path_is_named_up_front_and_the_same_path_is_silent() -> None:
    here = {"device": "cpu", "cpu_capability": "AVX512", "avx512_bf16": "true", "amx": "false", "threads": "2"}
    assert path_difference(json.dumps(here | {"threads": "8"}), here) == ""
    assert path_difference(None, here) == ""
    said = path_difference(json.dumps(here | {"cpu_capability": "AVX2", "amx": "true"}), here)
    assert "cpu_capability: AVX2 then, AVX512 here" in said and "amx: true then, false here" in said


@given(st.floats(0.01, 10), st.floats(-1e-5, 1e-5))
def test_across_paths_a_rounding_passes_and_a_real_difference_does_not(value: float, nudge: float) -> None:
    rows = [("train/loss", 1, value, value * (1 + nudge)), ("train/reward", 1, value, value * 1.01)]
    across = Comparison(rows, tolerance=CROSS_PATH_TOLERANCE)
    assert [r[0] for r in across.mismatches] == ["train/reward"]
    exact = Comparison(rows)
    assert "train/reward" in [r[0] for r in exact.mismatches]
    if nudge and value * (1 + nudge) != value:
        assert "train/loss" in [r[0] for r in exact.mismatches]
