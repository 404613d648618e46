"""Settings that failed late, or not at all, are refused when the config loads: the model's dtype,
device, sizes and LoRA, an RL phase's temperature and name, the teacher's random share, and the
report's and audits' thresholds (a NaN there switches a check off: every comparison is false)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.config.audit_schema import validate_audit, validate_report
from ttt_lab.config.load import load
from ttt_lab.config.schema import (
    DEVICE,
    DTYPES,
    AuditConfig,
    LoraConfig,
    ModelConfig,
    PhaseConfig,
    ReportConfig,
    _validate_model,
    _validate_phase,
)
from ttt_lab.errors import InvalidSetting

NOT_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])


def _refused(field: str, check, *args) -> None:
    with pytest.raises(InvalidSetting) as e:
        check(*args)
    assert e.value.field == field


@given(st.text(max_size=12))
def test_a_model_dtype_is_one_torch_has(dtype: str) -> None:
    m = ModelConfig(dtype=dtype)
    if dtype in DTYPES:
        _validate_model(m)
    else:
        _refused("model.dtype", _validate_model, m)


@given(st.one_of(st.text(max_size=10), st.from_regex(r"(cpu|cuda|mps|xpu)(:[0-9]{1,2})?", fullmatch=True)))
def test_a_model_device_is_a_torch_device_name(device: str) -> None:
    m = ModelConfig(device=device)
    if DEVICE.fullmatch(device):
        _validate_model(m)
    else:
        _refused("model.device", _validate_model, m)


@pytest.mark.parametrize(("device", "ok"), [("cpu", True), ("cuda", True), ("cuda:3", True), ("mps", True),
                                          ("xpu:0", True), ("cpu:0", False), ("gpu", False), ("cuda:", False),
                                          ("cuda:\u0661", False), ("CUDA", False), (" cpu", False)])
def test_which_device_names_pass(device: str, ok: bool) -> None:
    """`cpu:0` is refused: the code compares `model.device == "cpu"`, so it would run as an accelerator."""
    if ok:
        _validate_model(ModelConfig(device=device))
    else:
        _refused("model.device", _validate_model, ModelConfig(device=device))


@given(st.integers(-2, 300), st.integers(-2, 20))
def test_the_heads_split_the_width_evenly(hidden: int, heads: int) -> None:
    m = ModelConfig(hidden_size=hidden, num_heads=heads)
    if hidden >= 1 and heads >= 1 and hidden % heads == 0:
        _validate_model(m)
    else:
        _refused("model.num_heads" if heads < 1 and hidden >= 1 else "model.hidden_size", _validate_model, m)


@given(st.one_of(st.floats(-1, 2), NOT_FINITE))
def test_lora_dropout_is_a_share_below_one(p: float) -> None:
    m = ModelConfig(lora=LoraConfig(r=8, dropout=p))
    if 0 <= p < 1:
        _validate_model(m)
    else:
        _refused("model.lora.dropout", _validate_model, m)


@pytest.mark.parametrize(("lora", "field"), [(LoraConfig(r=-1), "model.lora.r"),
                                             (LoraConfig(alpha=0), "model.lora.alpha")])
def test_lora_rank_and_alpha(lora: LoraConfig, field: str) -> None:
    _refused(field, _validate_model, ModelConfig(lora=lora))


@given(st.one_of(st.floats(-1, 3), NOT_FINITE))
def test_an_rl_phase_samples_at_a_temperature_above_zero(t: float) -> None:
    p = PhaseConfig(temperature=t)
    if t > 0 and t != float("inf"):
        _validate_phase(p, "train.phases.0")
    else:
        _refused("train.phases.0.temperature", _validate_phase, p, "train.phases.0")


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".hidden", "x" * 129, "a..b"])
def test_a_phase_name_that_is_not_a_folder_name_is_refused(name: str) -> None:
    _refused("train.phases.0.name", _validate_phase, PhaseConfig(name=name), "train.phases.0")


@pytest.mark.parametrize("name", ["rl", "rl1", "phase-2_b.c"])
def test_a_phase_name_of_letters_digits_and_dots_passes(name: str) -> None:
    _validate_phase(PhaseConfig(name=name), "train.phases.0")


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(ReportConfig().stability)])
@given(bad=NOT_FINITE)
def test_no_stability_threshold_may_be_nan_or_infinite(field: str, bad: float) -> None:
    r = ReportConfig()
    setattr(r.stability, field, bad)
    _refused(f"report.stability.{field}", validate_report, r)


@pytest.mark.parametrize(("part", "field"), [("opponent", "noise_z_warn"), ("opponent", "noise_z_fail"),
                                             ("dataset", "balanced_warn"), ("dataset", "balanced_fail"),
                                             ("dataset", "balance_z_warn"), ("dataset", "balance_z_fail"),
                                             ("policy", "max_fork_rate")])
@given(bad=NOT_FINITE)
def test_no_audit_threshold_may_be_nan_or_infinite(part: str, field: str, bad: float) -> None:
    a = AuditConfig()
    setattr(getattr(a, part), field, bad)
    _refused(f"audit.{part}.{field}", validate_audit, a)


def test_the_defaults_and_every_model_preset_pass() -> None:
    validate_report(ReportConfig())
    validate_audit(AuditConfig())
    for name in ("tiny", "smollm2-135m", "qwen3-0.6b", "lfm2-350m"):
        _validate_model(load([f"model={name}"]).cfg.model)


@pytest.mark.parametrize(("override", "field"), [
    ("model.dtype=bf16", "model.dtype"),
    ("model.device=gpu", "model.device"),
    ("model.num_heads=3", "model.hidden_size"),
    ("train.phases.0.temperature=0", "train.phases.0.temperature"),
    ("train.sft.teacher_p_random=1.5", "train.sft.teacher_p_random"),
    ("report.stability.collapse_tail=nan", "report.stability.collapse_tail"),
    ("audit.policy.max_fork_rate=nan", "audit.policy.max_fork_rate"),
    ("train.vllm_gpu_memory_utilization=0", "train.vllm_gpu_memory_utilization"),
])
def test_loading_stops_at_the_setting(override: str, field: str) -> None:
    with pytest.raises(InvalidSetting) as e:
        load([override])
    assert e.value.field == field
