"""The Optuna storage shared by every worker of a study: SQLite under runs/ by default,
PostgreSQL (or any SQLAlchemy URL) for several machines, or Optuna's journal file
(`journal:///shared/path/study.log`) on a file system every node mounts, for a cluster without
a database server. Checked before any trial runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ttt_lab.first_use import one_creator
from ttt_lab.studies.spec import StudyError, StudySpec

ENV = "TTT_LAB_OPTUNA_STORAGE"
HEARTBEAT_S = 20
GRACE_S = 120
"""A RUNNING trial whose worker sent no heartbeat for GRACE_S is failed by the next start."""


def storage_url(given: str | None, home: str) -> str:
    return given or os.environ.get(ENV) or f"sqlite:///{home}/optuna.db"


def _hide_password(url: str) -> str:
    from ttt_lab.redact import redact

    return redact(url)


def open_storage(url: str):
    """An Optuna storage with heartbeats (RDBStorage, or the journal file), or a one-paragraph
    error naming what is wrong."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")  # ttt-lab beats itself
    if url.startswith(JOURNAL):
        from ttt_lab.studies.journal import open_journal

        return open_journal(journal_path(url), HEARTBEAT_S, GRACE_S)
    if url.startswith("postgresql"):
        _require_driver()
    return _open_rdb(url)


JOURNAL = "journal://"


def journal_path(url: str) -> Path:
    """`journal:///shared/runs/study.log` -> /shared/runs/study.log (a relative path after
    `journal://` is taken from the working directory)."""
    path = url.removeprefix(JOURNAL)
    if not path or path.endswith("/"):
        raise StudyError(f"the journal storage {url!r} names no file. Use journal:///shared/path/study.log (a file on "
                         "a file system every worker mounts).")
    return Path(path).absolute()


def _require_driver() -> None:
    import importlib.util

    if importlib.util.find_spec("psycopg") is None:
        raise StudyError("a postgresql:// storage needs the PostgreSQL driver, which this installation lacks: "
                         "pip install 'ttt-lab[postgresql]' (psycopg 3), or use journal:///shared/path/study.log "
                         "for a study shared through a file.")


def _open_rdb(url: str):
    import optuna
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            from ttt_lab.sqlite_files import check_sqlite_file

            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            check_sqlite_file(path, "Optuna storage")
        kwargs["connect_args"] = {"timeout": 60}
    elif url.startswith("postgresql"):
        # TCP keepalives: a dropped link to the database is noticed in about a minute, not hours.
        kwargs["connect_args"] = {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 30,
                                  "keepalives_interval": 10, "keepalives_count": 3}
    try:
        with one_creator(url, kwargs):
            return optuna.storages.RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_S,
                                              grace_period=GRACE_S)
    except (ArgumentError, NoSuchModuleError, ValueError) as e:
        raise StudyError(f"the Optuna storage URL {_hide_password(url)!r} is not usable ({str(e).splitlines()[0]}). "
                         "Use sqlite:///path/optuna.db, postgresql://user:password@host:5432/db or "
                         "journal:///shared/path/study.log.") from None
    except OperationalError as e:
        raise StudyError(_explain(url, e)) from None


def _explain(url: str, e: Exception) -> str:
    text = " ".join(str(getattr(e, "orig", e)).split())
    shown = _hide_password(url)
    if "password authentication failed" in text or "authentication failed" in text:
        return (f"the Optuna storage {shown} refused the credentials ({text[:200]}). Check the user and password in "
                f"--storage or ${ENV}.")
    if "does not exist" in text:
        return f"the Optuna storage {shown} has no such database ({text[:200]}). Create it (createdb) or fix the URL."
    return (f"cannot reach the Optuna storage {shown} ({text[:200]}). Start the database server or fix --storage / "
            f"${ENV}; every worker of a study must reach the same storage.")


def pruner(spec: StudySpec):
    import optuna

    p = spec.pruner
    if p["name"] == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=int(p.get("n_startup_trials", 2)),
                                           n_warmup_steps=int(p.get("n_warmup_steps", 0)))
    if p["name"] == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=p.get("min_resource", "auto"),
                                                      reduction_factor=int(p.get("reduction_factor", 3)))
    if p["name"] == "threshold":
        return optuna.pruners.ThresholdPruner(lower=p.get("lower"), upper=p.get("upper"),
                                              n_warmup_steps=int(p.get("n_warmup_steps", 0)))
    return optuna.pruners.NopPruner()


def create_or_load(storage, spec: StudySpec, distributions: dict[str, Any] | None = None):
    """The study, created if new (call in the parent before workers start: concurrent
    creation races); refuses a same-named study with another definition."""
    import optuna
    from sqlalchemy.exc import IntegrityError

    from ttt_lab.studies.sampling import sampler

    directions: list[Any] = [o.direction for o in spec.objectives]  # minimize | maximize, checked by the spec
    kw = {"study_name": spec.name, "storage": storage, "sampler": sampler(spec, distributions),
          "pruner": pruner(spec)}
    try:
        study = optuna.create_study(directions=directions, **kw)
        study.set_user_attr("spec_key", spec.key())
        study.set_user_attr("kind", spec.kind)
        return study
    except (optuna.exceptions.DuplicatedStudyError, IntegrityError):
        study = optuna.load_study(**kw)
    if study.user_attrs.get("spec_key", spec.key()) != spec.key():
        raise StudyError(f"a study named '{spec.name}' already exists in this storage with a different definition. "
                         "Give this one another name with --name, or delete the old study.")
    return study


def load(storage, spec: StudySpec, distributions: dict[str, Any] | None = None):
    import optuna

    from ttt_lab.studies.sampling import sampler

    return optuna.load_study(study_name=spec.name, storage=storage, sampler=sampler(spec, distributions),
                             pruner=pruner(spec))


def trial_id(trial) -> int:
    """Optuna's storage id of a live trial: the one private attribute this package reads
    (heartbeats and state changes are keyed by it); tests/studies check it still exists."""
    return trial._trial_id
