"""A sweep command composes each config once: the plan (the base config and one per grid trial) is
handed to the launcher, the runner and every look of --until-settled."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttt_lab import api
from ttt_lab.config import load as config_load
from ttt_lab.studies.plan import make_plan
from ttt_lab.studies.spec import from_args

GRID = ["seed=0,1,2", "experiment=smoke"]
"""Three trials, no short names (each config is one Hydra composition)."""


@pytest.fixture
def compositions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    monkeypatch.setenv("TTT_LAB_HOME", str(tmp_path / "runs"))
    seen: list[list[str]] = []
    real = config_load.compose_tree

    def counted(overrides: list[str]):
        seen.append(list(overrides))
        return real(overrides)

    monkeypatch.setattr(config_load, "compose_tree", counted)
    return seen


def test_a_sweep_command_composes_its_plan_once(compositions: list[list[str]]) -> None:
    api.sweep(None, GRID, dry_run=True)
    assert len(compositions) == 3 + 1  # N + 1: the trials and the study's fixed overrides
    assert sorted(map(tuple, compositions)) == sorted(set(map(tuple, compositions)))


def test_an_until_settled_command_composes_each_config_once(compositions: list[list[str]]) -> None:
    api.sweep(None, GRID, dry_run=True, until_settled=True)
    assert len(compositions) == 3 + 1


def test_a_look_with_more_seeds_composes_only_the_new_seeds(compositions: list[list[str]]) -> None:
    plan = make_plan(from_args(GRID, "looks"))
    assert len(compositions) == 3 + 1
    more = plan.replan(from_args(["seed=0,1,2,3,4", "experiment=smoke"], "looks"))
    assert len(more.trials) == 5 and len(compositions) == 5 + 1
    assert [t.config_hash for t in more.trials[:3]] == [t.config_hash for t in plan.trials]


def test_every_look_is_handed_the_plan(compositions: list[list[str]]) -> None:
    from ttt_lab.studies.runner import StudyOutcome
    from ttt_lab.studies.settle import run_until_settled

    plan = make_plan(from_args(GRID, "handed"))
    rounds = []

    def one_round(p):
        rounds.append(p)
        return StudyOutcome(p.spec.name, None, failed=1)  # a round that failed: no look is taken

    assert run_until_settled(plan, max_seeds=6, dry_run=False, run=one_round) == 1
    assert len(rounds) == 1 and [t.config_hash for t in rounds[0].trials] == [t.config_hash for t in plan.trials]
    assert len(compositions) == 3 + 1  # the storage's home and the round's configs came from the plan


def test_the_status_composes_the_base_config_once(compositions: list[list[str]]) -> None:
    with pytest.raises(api.TttLabError, match="no study named"):
        api.sweep_status(None, GRID, name="never-ran")
    assert len(compositions) == 1
