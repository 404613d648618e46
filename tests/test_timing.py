"""The phase clock: every second charged once, to the innermost open phase."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab import timing


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_nested_phases_charge_the_innermost_and_add_up_to_the_wall_time() -> None:
    clock = timing.Clock(already=2.0)
    t0 = time.perf_counter()
    with timing.running(clock), timing.phase("rl"):
        _spin(0.02)
        with timing.phase("eval"):
            _spin(0.03)
            with timing.phase("tracking"):
                _spin(0.01)
        _spin(0.02)
    wall = time.perf_counter() - t0
    m = clock.metrics()
    assert m["time/start_s"] == 2.0
    # lower bounds only: a busy machine may stretch any block, never shorten it
    assert m["time/rl_s"] >= 0.04 and m["time/eval_s"] >= 0.03 and m["time/tracking_s"] >= 0.01
    assert m["time/total_s"] == pytest.approx(2.0 + sum(m[f"time/{p}_s"] for p in timing.PHASES if p != "start"),
                                              abs=0.01)
    assert m["time/total_s"] - 2.0 <= wall + 0.01


def test_without_a_running_clock_a_phase_costs_nothing_and_an_unknown_phase_is_refused() -> None:
    assert timing.current() is None
    with timing.phase("rl"):
        pass
    with pytest.raises(ValueError, match="unknown phase 'warmup'"), timing.Clock().phase("warmup"):
        pass


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(timing.PHASES), st.integers(0, 3)), max_size=12))
def test_any_nesting_leaves_the_phases_summing_to_the_total(plan: list[tuple[str, int]]) -> None:
    clock = timing.Clock()
    with timing.running(clock):
        stack = []
        for name, close in plan:
            cm = timing.phase(name)
            cm.__enter__()
            stack.append(cm)
            for _ in range(min(close, len(stack))):
                stack.pop().__exit__(None, None, None)
        while stack:
            stack.pop().__exit__(None, None, None)
    assert timing.current() is None
    m = clock.metrics()
    assert all(m[f"time/{p}_s"] >= 0 for p in timing.PHASES)
    assert m["time/total_s"] == pytest.approx(sum(m[f"time/{p}_s"] for p in timing.PHASES), abs=0.005)


def test_start_up_is_charged_once_and_only_in_a_process_ttt_lab_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "_start", {"unclaimed": False})
    assert timing.claim_start() == 0.0  # a notebook or a test: its age is not ttt-lab's start-up
    timing.own_process()
    first = timing.claim_start()
    assert first > 0 and timing.claim_start() == 0.0
