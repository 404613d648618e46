import dataclasses
import json

import pytest

from ttt_lab.audit.checks import FAIL, PASS, SKIP
from ttt_lab.audit.dataset import DatasetSource, audit_dataset, read_saved
from ttt_lab.config.load import load
from ttt_lab.config.schema import DatasetAuditConfig
from ttt_lab.env.dataset import dataset_jsonl, make_dataset
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.errors import TttLabError


def source(ds: DatasetConfig, generations: int | None = None) -> DatasetSource:
    return DatasetSource("test", make_dataset(ds, 0), ds, generations)


def test_iid_small_batches_show_the_imbalance_stratified_ones_do_not():
    base = DatasetConfig(size=640, examples_per_batch=16, num_strata=16)
    stratified = audit_dataset(source(base), DatasetAuditConfig())
    iid = audit_dataset(source(dataclasses.replace(base, sampling="iid")), DatasetAuditConfig())
    assert stratified.check("stratum_balance").status == PASS
    assert stratified.check("stratum_balance").value == 1.0
    assert max(stratified.data["batch_deviation"]) < 1
    assert iid.check("stratum_balance").status == FAIL
    assert iid.check("stratum_balance").value < 0.5
    assert max(iid.data["batch_deviation"]) >= 2


def test_balance_checks_follow_the_settings():
    audit = audit_dataset(source(DatasetConfig(size=400, model_symbol="alternate")), DatasetAuditConfig())
    assert audit.check("first_player_balance").status == PASS
    assert audit.check("model_symbol_balance").status == PASS
    fixed = audit_dataset(source(DatasetConfig(size=400, first_player="model")), DatasetAuditConfig())
    assert fixed.check("first_player_balance").status == SKIP
    assert fixed.check("model_symbol_balance").status == SKIP


def test_duplicates_out_of_range_and_disorder_fail():
    ds = DatasetConfig(size=64, examples_per_batch=16, num_strata=4, p_min=0.2, p_max=0.6)
    examples = make_dataset(ds, 0)
    bad = [*examples[:-1], dataclasses.replace(examples[-1], seed=examples[0].seed, p_random=0.9)]
    audit = audit_dataset(DatasetSource("bad", bad, ds), DatasetAuditConfig())
    assert audit.check("duplicate_seeds").status == FAIL
    assert audit.check("p_random.range").value == 1
    shuffled = audit_dataset(DatasetSource("rev", examples[::-1], ds), DatasetAuditConfig())
    assert shuffled.check("batch_order").status == FAIL


@pytest.mark.parametrize("accumulation", [1, 4])
def test_trainer_sampler_hands_each_update_one_audited_batch(accumulation):
    ds = DatasetConfig(size=48, examples_per_batch=16, num_strata=16)
    src = dataclasses.replace(source(ds, generations=4), accumulation=accumulation)
    c = audit_dataset(src, DatasetAuditConfig()).check("batch_order")
    assert c.status == PASS and c.value == 1.0
    assert "3 of 3 GRPO updates" in c.detail


def test_saved_dataset_round_trips(tmp_path):
    ds = DatasetConfig(size=96, examples_per_batch=12, num_strata=6, sampling="iid")
    examples = make_dataset(ds, 3)
    (tmp_path / "dataset.jsonl").write_text(dataset_jsonl(examples))
    (tmp_path / "dataset.json").write_text(json.dumps(dataclasses.asdict(ds)))
    src = read_saved(tmp_path / "dataset.jsonl", DatasetConfig())
    assert src.examples == examples and src.settings == ds
    direct = audit_dataset(DatasetSource("x", examples, ds), DatasetAuditConfig())
    again = audit_dataset(src, DatasetAuditConfig())
    assert [c.value for c in direct.checks] == [c.value for c in again.checks]


def test_bad_saved_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(TttLabError, match="No dataset file"):
        read_saved(tmp_path / "missing.jsonl", DatasetConfig())
    (tmp_path / "dataset.jsonl").write_text('{"index": 0}\n')
    with pytest.raises(TttLabError, match="not a dataset written by ttt-lab"):
        read_saved(tmp_path / "dataset.jsonl", DatasetConfig())


def test_phase_datasets_are_audited_as_training_builds_them():
    from ttt_lab.audit.run import dataset_sources
    from ttt_lab.train.phase_data import phase_dataset

    loaded = load(["phase=two_stage", "steps=3"])
    sources = dataset_sources(loaded, None)
    assert len(sources) == len(loaded.cfg.train.phases) == 2
    for i, (src, phase) in enumerate(zip(sources, loaded.cfg.train.phases, strict=True)):
        assert src.examples == phase_dataset(loaded.cfg, phase, i, 3)
        assert src.num_generations == phase.num_generations


def test_a_merged_phase_audit_keeps_each_phases_checks_and_figures():
    from ttt_lab.audit.output import figures, html_section
    from ttt_lab.audit.run import dataset_audit

    audit = dataset_audit(load(["phase=two_stage", "steps=2"]), None)
    assert {c.name.split("/")[0] for c in audit.checks} == {"0-phase1", "1-phase2"}
    captions = [c for c, _ in figures(audit)]
    assert len(captions) == 4 and captions[0].startswith("0-phase1: ")
    assert html_section(audit).count("<svg") == 4


@pytest.mark.parametrize("meta", ["{not json", '{"size": 96, "colour": "red"}', '{"examples_per_batch": 0}', "[1, 2]"])
def test_a_broken_settings_file_beside_a_saved_dataset_is_a_clear_error(tmp_path, meta: str) -> None:
    """The `dataset.json` beside the examples is read under the same promise as they are: broken
    JSON, an unknown key or a setting out of range names that file and the fix, not a traceback."""
    ds = DatasetConfig(size=96, examples_per_batch=12, num_strata=6, sampling="iid")
    (tmp_path / "dataset.jsonl").write_text(dataset_jsonl(make_dataset(ds, 3)))
    (tmp_path / "dataset.json").write_text(meta)
    with pytest.raises(TttLabError, match=r"dataset\.json, the settings beside dataset\.jsonl"):
        read_saved(tmp_path / "dataset.jsonl", DatasetConfig())
