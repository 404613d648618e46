"""The real-model finding's table reads a warm-up summary: each round's passes, the walk after it,
the weights the warm-up ends with."""


import pytest

from tests.docs.finding_script import load


def _table():
    return load("docs/findings/real-model/table.py")


def _walk(after: str, seconds: float, loss: float, **more) -> dict:
    return {"after": after, "seconds": seconds, "walk_seconds": 100.0, "optimal_draw": 0.9,
            "optimal_draw_second": 0.8, "random_win": 0.8, "random_draw": 0.1, "random_loss": loss,
            "invalid_lines": 3, "mistakes": 50, "turns": 1200, "corrections": 40, **more}


CURVE = [{"after": "start", "seconds": 10.0, "train_seconds": 0.0, "move": 0.2},
         {"after": "epoch 1", "seconds": 200.0, "train_seconds": 180.0, "move": 0.5},
         {"after": "epoch 2", "seconds": 400.0, "train_seconds": 370.0, "move": 0.75},
         {"after": "DAgger 1 epoch 1", "seconds": 700.0, "train_seconds": 550.0, "move": 0.7},
         {"after": "DAgger 1 epoch 2", "seconds": 900.0, "train_seconds": 735.0, "move": 0.925}]
RATES = {k: v for k, v in _walk("", 0.0, 0.125).items() if k.startswith(("optimal_", "random_", "invalid_"))}
# the rounds ran out: the walk after the last passes, then the kept weights' rates read again
RAN_OUT = {"accuracy": CURVE,
           "dagger": [_walk("DAgger 1 start", 500.0, 0.125, round=1, pool=40),
                      _walk("DAgger last passes", 1000.0, 0.0375),
                      {**RATES, "random_loss": 0.0375, "after": "DAgger end", "seconds": 1000.0, "kept": "DAgger end"}]}
# the second walk ended the rounds (nothing trained after it) and the first walk's weights are kept
ENDED = {"accuracy": CURVE,
         "dagger": [_walk("DAgger 1 start", 500.0, 0.125, round=1, pool=40),
                    _walk("DAgger 2 start", 1000.0, 0.25, round=2, pool=60),
                    {**RATES, "after": "DAgger end", "seconds": 1000.0, "kept": "DAgger 1 start"}]}


def test_each_round_shows_its_passes_and_the_walk_after_it() -> None:
    header, sep, epoch, round_, end = _table().rows(RAN_OUT)
    assert header.startswith("| after |") and sep.startswith("|---|")
    assert epoch == ("| epoch 2 | 400 | 75.0 % | 90.0 % (80.0 %) | 80.0/10.0/12.5 | 3 "
                     "| 50 / 1,200: 40 (walked in 100 s) |")
    # the passes' own seconds (180 and 185), the walk after them, which trained nothing
    assert round_ == ("| round 1: 2 passes over 40 corrections (180, 185 s) | 900 | 70.0 % → 92.5 % | 90.0 % (80.0 %) "
                      "| 80.0/10.0/3.8 | 3 | 50 / 1,200 (walked in 100 s) |")
    assert end.startswith("| the warm-up ends: the weights walked at DAgger end | 1,000 |  | 90.0 % (80.0 %) "
                          "| 80.0/10.0/3.8 |")


def test_a_walk_that_ends_the_rounds_trained_nothing_and_the_kept_weights_are_named() -> None:
    *_, round_, end = _table().rows(ENDED)
    assert round_.endswith("| 80.0/10.0/25.0 | 3 | 50 / 1,200 (walked in 100 s) |"), round_
    assert "the weights walked at DAgger 1 start" in end and "80.0/10.0/12.5" in end, end


def test_a_warm_up_without_rounds_is_its_last_epoch() -> None:
    *_, epoch = _table().rows({"accuracy": CURVE[:3], "dagger": []})
    assert epoch.startswith("| epoch 2 | 400 | 75.0 % |")


def test_walks_of_the_optimal_lines_only_are_refused() -> None:
    with pytest.raises(SystemExit, match="whole-tree"):
        _table().rows({"accuracy": CURVE, "dagger": [{"after": "DAgger 1 start", "walk_seconds": 9.0}]})


def test_a_round_that_ran_no_pass_has_no_line() -> None:
    empty = {**ENDED, "dagger": [_walk("DAgger 1 start", 500.0, 0.125, round=1, pool=0),
                                 _walk("DAgger 2 start", 600.0, 0.125, round=2, pool=0)],
             "accuracy": CURVE[:3]}
    assert [r for r in _table().rows(empty) if r.startswith("| round")] == []
