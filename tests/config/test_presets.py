"""The embedded default is a measured setting, not a third recipe: tiny_cpu_study at the batch-size
finding's 12 updates a phase, composed to the same config (and so the same trials) as the finding."""

from __future__ import annotations

from dataclasses import asdict

from ttt_lab.config.load import load

FINDING = ["experiment=tiny_cpu_study", "train.phases.0.steps=12", "train.phases.1.steps=12", "train.eval_every=0"]
"""sweeps/batch_size_updates.yaml's overrides, its warm-up seed aside."""


def test_the_default_is_tiny_cpu_study_at_twelve_updates_a_phase() -> None:
    default, finding = load([]), load(FINDING)
    assert asdict(default.cfg) == asdict(finding.cfg)
    assert default.config_hash == finding.config_hash


def test_the_default_differs_from_its_source_only_in_steps_and_evaluations() -> None:
    study, default = asdict(load(["experiment=tiny_cpu_study"]).cfg), asdict(load([]).cfg)
    assert [p["steps"] for p in default["train"]["phases"]] == [12, 12]
    for phase in (*study["train"]["phases"], *default["train"]["phases"]):
        phase.pop("steps")
    study["train"].pop("eval_every"), default["train"].pop("eval_every")
    assert study == default
