"""The places a study writes to, each the kind of thing it must be (part of
`ttt_lab.studies.checks`, before anything is written): a folder where ttt-lab makes files, a file
(or nothing yet) where it opens one, a SQLite file that is the store it is named as, an Optuna
journal that is one. Reads only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from ttt_lab.errors import TttLabError
from ttt_lab.studies.spec import StudyError

SQLITE_HEADER = b"SQLite format 3\x00"
SHOWN = 8
"""Tables listed in a message at most."""
MARKS = {"Optuna storage": ("studies", "trials"), "MLflow store": ("experiments", "runs")}
"""Tables by which a SQLite file is known for what it is (a new or empty file is either)."""


def _blocked(key: str, value: str, p: Path) -> None:
    """The first existing folder above `p` must be a folder, or `p` cannot be created."""
    for up in p.absolute().parents:
        if up.exists():
            if not up.is_dir():
                raise StudyError(f"{key} {value!r} cannot be created: {up} is a file, not a folder. Point {key} at a "
                                 "path under a folder, or move the file aside.")
            return


def _folder(key: str, value: str) -> None:
    p = Path(value).expanduser()
    if p.exists() and not p.is_dir():
        raise StudyError(f"{key} {value!r} is a file, but it must be a folder (ttt-lab writes several files in it). "
                         f"Point {key} at a folder (a new one is created), or move the file aside.")
    _blocked(key, value, p)


def _file(key: str, value: str, path: str) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        raise StudyError(f"{key} {value!r} names {p}, which is a folder, but it must be a file (or not exist yet). "
                         f"Name a file inside it, e.g. {p / 'optuna.db'}.")
    _blocked(key, value, p)
    return p


def _sqlite(key: str, value: str, path: str, what: str) -> None:
    """A SQLite file: a file or nothing yet, and SQLite when it is there (read-only:
    `ttt_lab.sqlite_files.check_sqlite_file`)."""
    from ttt_lab.sqlite_files import check_sqlite_file

    if not path or path == ":memory:":
        return
    p = _file(key, value, path)
    try:
        check_sqlite_file(p, what)
        tables = _tables(p)
    except TttLabError as e:
        raise StudyError(f"{key} {value!r}: {e}") from None
    except (OSError, sqlite3.Error) as e:
        raise StudyError(f"{key} {value!r}: cannot read {p} ({e}). Fix its permissions or point {key} "
                         "elsewhere.") from None
    if tables and not set(MARKS[what]) <= tables:
        shown = ", ".join(sorted(tables)[:SHOWN]) + (", …" if len(tables) > SHOWN else "")
        raise StudyError(f"{key} {value!r} names {p}, a SQLite database that is not an {what} (its tables: {shown}; "
                         f"an {what} has {' and '.join(MARKS[what])}): opening it would add the {what}'s tables to "
                         "another program's database. Nothing was written to it. Point the URL at a new file or at "
                         f"an existing {what}.")


def _tables(p: Path) -> set[str]:
    """The tables of the SQLite file `p` (empty when it is absent or new), read-only."""
    if not p.is_file() or p.stat().st_size == 0:
        return set()
    con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def _journal(key: str, value: str, path: str) -> None:
    p = _file(key, value, path)
    if not p.is_file() or p.stat().st_size == 0:
        return
    try:
        with p.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError as e:
        raise StudyError(f"{key} {value!r}: cannot read {p} ({e.strerror}). Fix its permissions or point {key} "
                         "elsewhere.") from None
    try:
        ok = isinstance(json.loads(first), Mapping)
    except ValueError:
        ok = False
    if not ok:
        what = "a SQLite database" if first.startswith(SQLITE_HEADER) else "not an Optuna journal"
        other = f", or use sqlite:///{p} for a SQLite file" if what.startswith("a SQLite") else ""
        raise StudyError(f"{key} {value!r} names {p}, which is {what} (a journal is one JSON record a line). Nothing "
                         f"was written to it. Point journal:/// at a new file or an existing study's journal{other}.")


def _url_path(url: str, scheme: str) -> str:
    return url.removeprefix(scheme).split("?", 1)[0]


def check_places(cfg, storage: str | None, launch=None) -> None:
    """Every path the study writes to is the kind of thing it must be: folders where ttt-lab makes
    files, files (or nothing yet) where it opens one, databases that are databases."""
    from ttt_lab.studies.storage import ENV, JOURNAL, storage_url

    _folder("home", str(cfg.home))
    uri = str(cfg.tracking.uri)
    if uri.startswith("sqlite:///"):
        _sqlite("tracking.uri", uri, _url_path(uri, "sqlite:///"), "MLflow store")
    elif uri.startswith("file:") or "://" not in uri:
        _folder("tracking.uri", _url_path(uri, "file://") if uri.startswith("file://") else uri.removeprefix("file:"))
    art = str(cfg.tracking.artifacts)
    if art.startswith("file:") or "://" not in art:
        _folder("tracking.artifacts", art.removeprefix("file://") if art.startswith("file://") else art)
    _folder("audit.out", str(cfg.audit.out))
    if launch is not None:
        _folder("launcher.log_dir", str(launch.launcher.log_dir))
    url = storage_url(storage, cfg.home)
    key = "--storage" if storage else f"${ENV}" if url != f"sqlite:///{cfg.home}/optuna.db" else "the storage"
    if url.startswith("sqlite:///"):
        _sqlite(key, url, _url_path(url, "sqlite:///"), "Optuna storage")
    elif url.startswith(JOURNAL):
        path = url.removeprefix(JOURNAL)
        if path and not path.endswith("/"):
            _journal(key, url, path)
