"""Property: every study file and command-line grid drawn from the study schema (good values,
boundaries, values that cannot mean what the user meant, places of the wrong kind) either plans
(`--dry-run`) or is refused with one paragraph (exit 2, `TttLabError`), never a traceback; and
nothing already written changes (a refused one writes nothing at all). In process through
`ttt_lab.api.sweep(dry_run=True)` for speed, a few through the real CLI; the fuzzing run of
thousands is `make test-slow` (TTT_LAB_CHECKS_FUZZ examples, default 2000)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import cli
from tests.studies.study_strategies import Options, Places, command_lines, options, snapshot, study_files
from ttt_lab import api
from ttt_lab.errors import TttLabError
from ttt_lab.studies import command

QUICK = settings(max_examples=10, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                        HealthCheck.data_too_large])


class World:
    """A home with an MLflow store and an Optuna storage already written, the places the
    strategies point at, an empty working folder, and one composer for every plan (configs are
    composed once across examples)."""

    def __init__(self, home: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home, self.places = home, Places(root / "places")
        self.work = root / "work"
        self.work.mkdir()
        self.places.make()
        monkeypatch.chdir(self.work)
        shared = command.Composer()
        monkeypatch.setattr(command, "Composer", lambda: shared)
        api.sweep(None, ["batch_size=8,16", "experiment=smoke"], dry_run=True, name="already")
        self.tally = {0: 0, 2: 0}

    def write(self, study: dict) -> Path:
        path = self.places.root / "study.yaml"
        path.write_text(yaml.safe_dump(study, sort_keys=False))
        return path

    def attempt(self, study: Path | None, args: list[str], opts: Options) -> TttLabError | None:
        """Plan it (dry run); the one-paragraph error when refused. Anything else raises."""
        before = {**self._snap()}
        try:
            api.sweep(study, args, dry_run=True, **opts.kwargs())
            error = None
        except TttLabError as e:
            error = e
        after = self._snap()
        changed = sorted(k for k, h in before.items() if after.get(k) != h)
        assert not changed, f"{study} {args} {opts}: changed what was written before: {changed}"
        if error is not None:
            text = str(error).strip()
            assert text and "\n" not in text and "Traceback" not in text, f"not one paragraph: {text!r}"
            made = sorted(set(after) - set(before))
            assert not made, f"refused ({text}) but wrote {made}"
        self.tally[0 if error is None else 2] += 1
        return error

    def _snap(self) -> dict[str, str]:
        return {f"home/{k}": v for k, v in snapshot(self.home).items()} | {
            f"places/{k}": v for k, v in snapshot(self.places.root).items() if k != "study.yaml"} | {
            f"work/{k}": v for k, v in snapshot(self.work).items()}


@pytest.fixture
def world(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    return World(home, tmp_path, monkeypatch)


def _study_or_line(world: World):
    places = world.places
    return st.one_of(study_files(places).map(lambda s: ("file", s)), command_lines(places).map(lambda a: ("args", a)))


def _one(world: World, drawn, opts: Options) -> TttLabError | None:
    what, value = drawn
    if what == "file":
        return world.attempt(world.write(value), [], opts)
    return world.attempt(None, value, opts)


@pytest.mark.xdist_group("checks-property")
def test_study_files_and_command_lines_plan_or_say_why(world: World) -> None:
    @QUICK
    @given(st.data())
    def check(data) -> None:
        _one(world, data.draw(_study_or_line(world)), data.draw(options(world.places)))

    check()
    assert world.tally[0] and world.tally[2], world.tally  # both outcomes were reached


@pytest.mark.xdist_group("checks-property")
@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.data())
def test_the_real_cli_plans_or_exits_2_without_a_traceback(home: Path, tmp_path_factory, data) -> None:
    root = tmp_path_factory.mktemp("cli")
    places = Places(root / "places")
    places.make()
    study = data.draw(study_files(places))
    opts = data.draw(options(places))
    path = root / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    before = snapshot(home) | {f"p/{k}": v for k, v in snapshot(places.root).items()}
    out = cli("sweep", str(path), "--dry-run", *opts.flags(), check=False, cwd=str(root), timeout=240)
    said = out.stdout + out.stderr
    assert out.returncode in (0, 2), said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    if out.returncode == 2:
        assert out.stderr.strip().startswith("Error:"), said[-3000:]
    after = snapshot(home) | {f"p/{k}": v for k, v in snapshot(places.root).items()}
    assert all(after.get(k) == h for k, h in before.items()), "what was written before changed"


@pytest.mark.slow
def test_fuzzing_thousands_of_studies_finds_no_traceback(world: World) -> None:
    n = int(os.environ.get("TTT_LAB_CHECKS_FUZZ", "2000"))

    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(st.data())
    def check(data) -> None:
        _one(world, data.draw(_study_or_line(world)), data.draw(options(world.places)))

    start = time.perf_counter()
    check()
    total = sum(world.tally.values())
    print(f"\nfuzzed {total} study files and command lines in {time.perf_counter() - start:.0f} s: "
          f"{world.tally[0]} planned, {world.tally[2]} refused in one paragraph")
    assert total >= n
