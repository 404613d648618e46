"""File locks: a waiter that gives up names the holder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ttt_lab.locks import LockTimeout, file_lock, holder


def test_a_timed_wait_names_who_holds_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    waited: list[bool] = []
    with file_lock(lock):
        assert f"pid {os.getpid()}" in holder(lock)
        with pytest.raises(LockTimeout, match=f"held by .* pid {os.getpid()}"), \
                file_lock(lock, on_wait=lambda: waited.append(True), timeout_s=0.3):
            pass
    assert waited == [True]
    with file_lock(lock, timeout_s=0.3):  # free again
        pass
