"""The real-model finding's table reads a warm-up summary: each round's passes, the walk after it."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _table():
    spec = importlib.util.spec_from_file_location("table", ROOT / "docs/findings/real-model/table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _walk(after: str, seconds: float, loss: float, **more) -> dict:
    return {"after": after, "seconds": seconds, "walk_seconds": 100.0, "optimal_draw": 0.9,
            "optimal_draw_second": 0.8, "random_win": 0.8, "random_draw": 0.1, "random_loss": loss,
            "invalid_lines": 3, "mistakes": 50, "turns": 1200, "corrections": 40, **more}


SUMMARY = {
    "accuracy": [{"after": "start", "seconds": 10.0, "train_seconds": 0.0, "move": 0.2},
                 {"after": "epoch 1", "seconds": 200.0, "train_seconds": 180.0, "move": 0.5},
                 {"after": "epoch 2", "seconds": 400.0, "train_seconds": 370.0, "move": 0.75},
                 {"after": "DAgger 1 epoch 1", "seconds": 700.0, "train_seconds": 550.0, "move": 0.7},
                 {"after": "DAgger 1 epoch 2", "seconds": 900.0, "train_seconds": 735.0, "move": 0.925}],
    "dagger": [_walk("DAgger 1 start", 500.0, 0.125, round=1, pool=40),
               _walk("DAgger last passes", 1000.0, 0.0375),
               {"after": "DAgger end", "seconds": 1000.0, "kept": "DAgger end", "random_loss": 0.0375}],
}


def test_each_round_shows_its_passes_and_the_walk_after_it() -> None:
    header, sep, epoch, round_ = _table().rows(SUMMARY)
    assert header.startswith("| after |") and sep.startswith("|---|")
    assert epoch == ("| epoch 2 | 400 | 75.0 % | 90.0 % (80.0 %) | 80.0/10.0/12.5 | 3 "
                     "| 50 / 1,200: 40 (walked in 100 s) |")
    # the passes' own seconds (180 and 185), the walk after them, which trained nothing
    assert round_ == ("| round 1: 2 passes over 40 corrections (180, 185 s) | 900 | 70.0 % → 92.5 % | 90.0 % (80.0 %) "
                      "| 80.0/10.0/3.8 | 3 | 50 / 1,200 (walked in 100 s) |")


def test_a_warm_up_without_rounds_is_the_header_alone() -> None:
    assert len(_table().rows({"accuracy": SUMMARY["accuracy"][:3], "dagger": []})) == 2
