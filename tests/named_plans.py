"""The shipped studies (sweeps/*.yaml), each planned once per test process: planning composes every
grid trial's config (Hydra, ~0.1 s each; ~200 configs for the shipped studies), and several
tests plan or dry-run them all. Through the `named_plans` fixture; mark its tests
`xdist_group("named-plans")` so that one test process plans them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ttt_lab.config.load import Loaded, studies_dir
from ttt_lab.studies.plan import Plan, make_plan
from ttt_lab.studies.spec import from_file

SWEEPS = studies_dir()
NAMES = sorted(p.stem for p in SWEEPS.glob("*.yaml"))


class NamedPlans:
    """Each shipped study's spec and plan (`ttt_lab.studies.plan.make_plan` of `from_file`), made
    on first use, their configs composed with TTT_LAB_HOME=`home`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._plans: dict[str, Plan] = {}

    @contextlib.contextmanager
    def _at_home(self) -> Iterator[pytest.MonkeyPatch]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TTT_LAB_HOME", str(self.home))
            yield mp

    def plan(self, name: str) -> Plan:
        if name not in self._plans:
            with self._at_home():
                self._plans[name] = make_plan(from_file(SWEEPS / f"{name}.yaml", []))
        return self._plans[name]

    def load(self, name: str, overrides: list[str]) -> Loaded:
        """`ttt_lab.config.load.load(overrides)`, through the study's plan's composer: a trial's
        config is not composed again."""
        compose = self.plan(name).compose
        with self._at_home():
            return compose(overrides)

    @contextlib.contextmanager
    def reused(self, name: str) -> Iterator[Path]:
        """For the block, a sweep command in this process (`ttt_lab.api.sweep`) is handed the
        study's composer, so planning `name` composes nothing anew, and TTT_LAB_HOME is `home`
        (the home its configs hold); `home`."""
        from ttt_lab.studies import command

        compose = self.plan(name).compose
        with self._at_home() as mp:
            mp.setattr(command, "Composer", lambda: compose)
            yield self.home
