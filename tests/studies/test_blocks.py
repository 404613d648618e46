"""Blocks (a second warm-up seed): conditions paired within a block, each block also decided alone."""

from __future__ import annotations

import csv
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from docs.findings.replay import replay
from ttt_lab.studies.blocks import by_condition, split
from ttt_lab.studies.spec import from_file


def test_a_block_key_leaves_the_condition_and_keys_the_runs() -> None:
    assert split(["opponent=a", "train.sft.seed=1", "seed=3"], ["train.sft.seed"]) == ("opponent=a",
                                                                                       "train.sft.seed=1")
    runs = [(["opponent=a", "train.sft.seed=0", "seed=0"], 0, 0.5), (["opponent=a", "train.sft.seed=1", "seed=0"], 0,
                                                                     0.7)]
    cond, per = by_condition(runs, ["train.sft.seed"])
    assert cond == {"opponent=a": {("train.sft.seed=0", 0): 0.5, ("train.sft.seed=1", 0): 0.7}}
    assert per == {"train.sft.seed=0": {"opponent=a": {0: 0.5}}, "train.sft.seed=1": {"opponent=a": {0: 0.7}}}
    assert by_condition(runs[:1], [])[0] == {"opponent=a train.sft.seed=0": {0: 0.5}}


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5))
def test_every_run_lands_once_whatever_the_blocks(n_blocks: int, n_seeds: int) -> None:
    runs = [([f"a={c}", f"w={b}", f"seed={s}"], s, float(c + b + s)) for c in (0, 1) for b in range(n_blocks)
            for s in range(n_seeds)]
    cond, per = by_condition(runs, ["w"])
    assert sum(len(v) for v in cond.values()) == len(runs)
    assert sum(len(v) for blk in per.values() for v in blk.values()) == len(runs)


def test_a_blocked_study_is_decided_over_all_blocks_and_within_each(tmp_path: Path) -> None:
    study = tmp_path / "m.yaml"
    study.write_text("name: m\nbaseline: opponent=a\nblocks: [train.sft.seed]\nmargin: 0.1\n"
                     "params:\n  opponent: a,b\n  train.sft.seed: 0,1\n  seed: 0,1,2\n")
    results = tmp_path / "results.csv"
    with results.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial", "condition", "seed", "overrides", "status", "config_hash", "run_id",
                    "eval/optimal/draw_rate"])
        n = 0
        for warm in (0, 1):
            for opp, base in (("a", 0.8), ("b", 0.5)):
                for s in range(3):
                    cond = f"opponent={opp} train.sft.seed={warm}"
                    value = base + 0.01 * s + 0.02 * warm
                    w.writerow([n, cond, s, f"{cond} seed={s}", "COMPLETE", "h", f"r{n}", value])
                    n += 1
    a = replay(results, from_file(study, []))
    (c,) = a.comparisons
    assert c.condition == "opponent=b" and c.seeds == 6 and abs(c.difference + 0.3) < 1e-9
    assert set(a.per_block or {}) == {"train.sft.seed=0", "train.sft.seed=1"}
    assert all(cs[0].seeds == 3 for cs in (a.per_block or {}).values())
    assert a.as_dict()["blocks"]["train.sft.seed=1"][0]["condition"] == "opponent=b"
