"""Atomic writes give files the mode a plain write would: a report one user builds is readable
by another on the same machine."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab import atomic


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def plain_mode(folder: Path, mask: int) -> int:
    """What `open(path, "w")` gives a new file under `mask`: the reference, not a formula."""
    with umask(mask):
        ref = folder / "plain-reference"
        ref.write_text("x")
    m = mode(ref)
    ref.unlink()
    return m


@given(st.sampled_from([0o022, 0o002, 0o027, 0o077, 0o000, 0o026]))
def test_a_new_file_gets_the_mode_a_plain_write_gives_under_the_umask(mask: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        with umask(mask):
            path = atomic.write_text(folder / "page.html", "<p>x</p>")
        assert mode(path) == plain_mode(folder, mask) == 0o666 & ~mask
        assert path.read_text() == "<p>x</p>"
        assert [p.name for p in folder.iterdir()] == ["page.html"], "no temp file is left behind"


def test_an_existing_file_keeps_its_mode_as_a_plain_write_over_it_would(tmp_path: Path) -> None:
    path = tmp_path / "audit.json"
    path.write_text("old")
    path.chmod(0o640)
    with umask(0o022):
        atomic.write_text(path, "new")
    assert mode(path) == 0o640 and path.read_text() == "new"


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "done.json"
    atomic.write_text(path, "complete")
    with pytest.raises(UnicodeEncodeError):
        atomic.write_text(path, "half \udc80")  # a lone surrogate cannot be encoded: the write fails
    assert path.read_text() == "complete"
    assert [p.name for p in tmp_path.iterdir()] == ["done.json"]


def test_a_report_built_by_one_user_is_readable_by_another() -> None:
    from tests.report.test_render import study
    from ttt_lab.report.render import build, write

    with tempfile.TemporaryDirectory() as d, umask(0o022):
        folder = Path(d)
        folder.chmod(0o755)  # a shared folder, as a report's home on a cluster is
        written = write(build(study(), with_audits=False), folder / "bs")
        files = [*written, *(folder / "bs" / "figures").iterdir()]
        assert files and all(mode(p) & stat.S_IROTH and mode(p) & stat.S_IRGRP for p in files), \
            {p.name: oct(mode(p)) for p in files}
        if os.geteuid() != 0:
            return  # only root can become another user here; the mode bits above are what decides
        closed = [p for p in folder.parents if not mode(p) & stat.S_IXOTH]
        if closed:
            pytest.skip(f"{closed[0]} is closed to other users, so no file below it can be opened by one")
        read = subprocess.run(["head", "-c", "15", str(written[0])], user=65534, group=65534, extra_groups=[],
                              capture_output=True, text=True, timeout=60)
        assert read.returncode == 0 and read.stdout.startswith("<!"), read.stderr
