"""Damaged SQLite stores are one clear error that names the file, and are left as they were."""

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import cli
from ttt_lab.sqlite_files import CorruptStoreError, check_sqlite_file


def _garbage(path: Path) -> bytes:
    data = b"not a database at all\n" * 200
    path.write_bytes(data)
    return data


def test_a_file_that_is_not_a_database_is_refused_by_name(tmp_path: Path) -> None:
    _garbage(tmp_path / "x.db")
    with pytest.raises(CorruptStoreError, match=r"x\.db is not a readable SQLite database"):
        check_sqlite_file(tmp_path / "x.db", "tracking store")
    check_sqlite_file(tmp_path / "missing.db", "tracking store")  # a new store is created, not refused
    (tmp_path / "empty.db").write_bytes(b"")
    check_sqlite_file(tmp_path / "empty.db", "tracking store")


@pytest.mark.parametrize("command", [["runs", "list"], ["eval", "player=random", "games=2"]])
def test_a_damaged_tracking_store_is_one_error_naming_it(home: Path, command: list[str]) -> None:
    data = _garbage(home / "mlflow.db")
    out = cli(*command, check=False)
    assert out.returncode == 2, out.stderr
    assert f"{home / 'mlflow.db'} is not a readable SQLite database" in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr and (home / "mlflow.db").read_bytes() == data


def test_a_damaged_optuna_storage_stops_the_sweep_before_any_trial(home: Path) -> None:
    data = _garbage(home / "optuna.db")
    out = cli("sweep", "batch_size=8,16", "experiment=smoke", check=False)
    assert out.returncode == 2 and "optuna.db is not a readable SQLite database" in " ".join(out.stderr.split())
    assert (home / "optuna.db").read_bytes() == data and not (home / "train").exists()


def test_a_store_damaged_past_its_header_is_the_same_clear_error(home: Path) -> None:
    cli("eval", "player=random", "games=2")
    db = home / "mlflow.db"
    size = db.stat().st_size
    with db.open("r+b") as f:  # every third page past the first overwritten: the header still reads
        for offset in range(8192, size, 3 * 4096):
            f.seek(offset)
            f.write(os.urandom(512))
    shutil.copy(db, home / "before.db")
    out = cli("runs", "list", check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    said = " ".join(out.stderr.split())
    assert "SQLite store is damaged" in said or f"{db} is not a readable SQLite database" in said
    assert "Traceback" not in out.stderr
    assert db.read_bytes() == (home / "before.db").read_bytes()


def test_sqlite_s_own_word_for_damage_becomes_the_error_and_nothing_else_does() -> None:
    import sqlite3

    from ttt_lab.sqlite_files import as_store_error

    damaged = sqlite3.DatabaseError("database disk image is malformed")
    found = as_store_error(RuntimeError(f"(sqlite3.DatabaseError) {damaged}"))
    assert isinstance(found, CorruptStoreError) and "integrity_check" in str(found)
    assert as_store_error(ValueError("no such column: x")) is None
