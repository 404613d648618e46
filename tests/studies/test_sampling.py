"""Searches sample per trial: any number of processes sharing a study draw what one would."""

from pathlib import Path

import optuna
import pytest

from ttt_lab.studies.spec import StudySpec
from ttt_lab.studies.storage import create_or_load, load, open_storage


def spec(sampler: str) -> StudySpec:
    return StudySpec(name=f"s-{sampler}", kind="search", n_trials=8,
                     params={"lr": "tag(log, interval(1e-5, 1e-3))", "temperature": "interval(0.5, 1.5)",
                             "loss_type": "choice(grpo, dapo, cispo)"},
                     sampler={"name": sampler, "seed": 3, "n_startup_trials": 3})


def asked(path: Path, s: StudySpec, processes: int, n: int) -> list[dict]:
    """`n` trials asked in turn by `processes` study objects over one storage, each told at once."""
    storage = open_storage(f"sqlite:///{path}")
    dists = {"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True),
             "temperature": optuna.distributions.FloatDistribution(0.5, 1.5),
             "loss_type": optuna.distributions.CategoricalDistribution(["grpo", "dapo", "cispo"])}
    studies = [create_or_load(storage, s, dists)] + [load(storage, s, dists) for _ in range(processes - 1)]
    got = []
    for i in range(n):
        study = studies[i % processes]
        trial = study.ask(fixed_distributions=dists)
        got.append(trial.params)
        study.tell(trial, trial.params["temperature"] - (trial.params["loss_type"] == "cispo"))
    return got


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_two_processes_draw_what_one_draws(tmp_path: Path, sampler: str) -> None:
    one = asked(tmp_path / "one.db", spec(sampler), 1, 6)
    two = asked(tmp_path / "two.db", spec(sampler), 2, 6)
    assert one == two
    assert len({p["temperature"] for p in two}) == 6  # no two trials share parameters


def test_another_seed_draws_other_parameters(tmp_path: Path) -> None:
    other = spec("random")
    other.sampler = dict(other.sampler, seed=4)
    assert asked(tmp_path / "a.db", spec("random"), 1, 3) != asked(tmp_path / "b.db", other, 1, 3)


def test_no_seed_is_not_reproducible(tmp_path: Path) -> None:
    free = spec("random")
    free.sampler = {"name": "random", "seed": None}
    assert asked(tmp_path / "a.db", free, 1, 3) != asked(tmp_path / "b.db", free, 1, 3)
