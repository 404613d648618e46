"""A study file's decision keys: a bad value is refused in one paragraph naming the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.studies.spec import StudyError, from_file

BASE = "name: d\nparams:\n  batch_size: 8,16\n  seed: 0,1\n"


@pytest.mark.parametrize(("extra", "named"), [
    ("decisions: bayes\n", "decisions"),
    ("decisions: fixed\nlooks: [6, 3]\n", "looks"),
    ("decisions: fixed\nlooks: [1]\n", "looks"),
    ("looks: [6, 9]\n", "looks"),
    ("bounds: [1, 0]\n", "bounds"),
    ("bounds: [0]\n", "bounds"),
    ("bounds: [0, 0.04]\n", "margin"),
    ("collapse_below: x\n", "collapse_below"),
    ("collapse_below: 0.6\ncollapse_alpha: 0.2\n", "collapse_alpha"),
])
def test_bad_decision_keys_are_refused_naming_the_key(tmp_path: Path, extra: str, named: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(BASE + extra)
    with pytest.raises(StudyError) as e:
        from_file(f, [])
    assert named in str(e.value) and "\n" not in str(e.value).strip()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(2, 200), min_size=1, max_size=6, unique=True))
def test_any_increasing_looks_are_accepted_for_a_fixed_design(tmp_path_factory, looks: list[int]) -> None:
    f = tmp_path_factory.mktemp("s") / "d.yaml"
    f.write_text(BASE + f"decisions: fixed\nlooks: {sorted(looks)}\n")
    spec = from_file(f, [])
    assert spec.decisions == "fixed" and spec.looks == sorted(looks)
    assert spec.key() == from_file(f, []).key()  # the decision keys do not change the study's identity
