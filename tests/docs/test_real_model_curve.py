"""The real-model finding's figure reads a warm-up summary's curves in minutes and percent."""

import json
import sys
from pathlib import Path

from tests.docs.finding_script import load


def _curve():
    return load("docs/findings/real-model/curve.py")


SUMMARY = {"accuracy": [{"after": "start", "seconds": 6.0, "move": 0.2}, {"after": "epoch 1", "seconds": 120.0,
                                                                          "move": 0.5}],
           "dagger": [{"after": "DAgger 1 start", "round": 1, "seconds": 600.0, "optimal_draw": 0.9,
                       "random_win": 0.7, "random_loss": 0.11},
                      {"after": "DAgger end", "seconds": 1200.0, "optimal_draw": 0.85, "kept": "DAgger 1 start"}]}


def test_the_curves_are_percent_against_minutes_and_skip_missing_rates() -> None:
    got = _curve().series(SUMMARY)
    assert got["teacher-forced move digit"] == [(0.1, 20.0, 20.0, 20.0), (2.0, 50.0, 50.0, 50.0)]
    assert [p[:2] for p in got["draws vs optimal (lines)"]] == [(10.0, 90.0), (20.0, 85.0)]
    assert [p[:2] for p in got["losses vs random (tree)"]] == [(10.0, 11.0)]  # the end row walked no tree


def test_the_script_writes_an_svg_with_the_rounds_marked(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SUMMARY))
    monkeypatch.setattr(sys, "argv", ["curve.py", str(tmp_path / "s.json"), "--out", str(tmp_path / "c.svg")])
    _curve().main()
    svg = (tmp_path / "c.svg").read_text()
    assert svg.startswith("<svg") and "DAgger 1" in svg and svg.count("<polyline") == 4
