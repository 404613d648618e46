"""Recovery of trials left RUNNING: by pid only where a pid means the same process (this
host's boot and PID namespace), by heartbeat everywhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttt_lab.studies.identity import host_identity


def test_the_identity_names_the_pid_namespace() -> None:
    import socket

    name, boot, ns = host_identity().split("/", 2)
    assert boot
    assert name == socket.gethostname() and ns.startswith("pid:")


@pytest.fixture
def running(home: Path):
    """A study on SQLite with two RUNNING trials whose recorded pid is dead: one from this host's
    namespace, one from a container with the same hostname but its own PID namespace."""
    import optuna

    from ttt_lab.studies.storage import open_storage, trial_id
    from ttt_lab.tracking.store import open_store

    storage = open_storage(f"sqlite:///{home}/optuna.db")
    study = optuna.create_study(study_name="s", storage=storage)
    dead = 2**22 + 12345  # above the usual pid_max: no such process
    here, twin = study.ask(), study.ask()
    for trial, host in ((here, host_identity()), (twin, host_identity().rsplit("/", 1)[0] + "/pid:[1]")):
        trial.set_user_attr("host", host)
        trial.set_user_attr("pid", dead)
        storage.record_heartbeat(trial_id(trial))
    return study, storage, open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))


def test_a_dead_pid_in_another_pid_namespace_is_left_to_its_heartbeat(running) -> None:
    from ttt_lab.studies.recovery import recover

    study, storage, store = running
    assert recover(study, storage, store) == [0]
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "RUNNING"]
