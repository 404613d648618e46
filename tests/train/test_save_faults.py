"""Real faults during a training's checkpoint saves: a SIGKILL in the middle of a save, and a
disk that fills up (a small tmpfs as the home). Nothing complete is lost; the re-run resumes."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests import forked_cli
from tests.conftest import cli
from ttt_lab.train.checkpoints import complete

pytestmark = pytest.mark.slow

# A model large enough that a save takes long enough to be caught in the middle (~40 MB a checkpoint).
BIG = ["model.hidden_size=256", "model.num_layers=4", "model.num_heads=4", "model.intermediate_size=1024"]
ARGS = ["experiment=smoke", *BIG, "steps=12", "batch_size=8", "train.save_every=1", "tracking.enabled=false"]


def _checkpoints(home: Path) -> list[Path]:
    return [p for p in home.glob("train/*/*.work/trainer/checkpoint-*") if p.name.split("-")[1].isdigit()]


def _kill_mid_save(home: Path) -> bool:
    """Start the training and SIGKILL it while a checkpoint is being written; True if the kill
    landed mid-save (an incomplete checkpoint is left), False if it finished first."""
    proc = forked_cli.popen(["train", *ARGS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        saving = [cp for cp in _checkpoints(home) if (cp / "model.safetensors").exists() and not complete(cp)]
        if saving:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            return any(not complete(cp) for cp in _checkpoints(home))
    proc.wait(timeout=300)
    return False


def test_a_kill_in_the_middle_of_a_save_resumes_from_the_last_complete_checkpoint(home: Path) -> None:
    for _ in range(5):  # each attempt resumes where the last left off; the kill must land inside a save
        if _kill_mid_save(home):
            break
    else:
        pytest.fail("no kill landed inside a checkpoint save in 5 tries")
    out = cli("train", *ARGS)
    said = " ".join((out.stdout + out.stderr).split())
    assert "is incomplete (an interrupted save): set aside" in said and "resum" in said
    (done,) = home.glob("train/*/0-rl/done.json")
    assert json.loads(done.read_text())["steps"] == 12


@pytest.fixture
def small_disk(tmp_path: Path, shared_home: Path, monkeypatch: pytest.MonkeyPatch):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=75m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    shutil.copytree(shared_home, mount / "runs")
    monkeypatch.setenv("TTT_LAB_HOME", str(mount / "runs"))
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_one_error_and_the_re_run_on_a_freed_disk_continues(small_disk: Path) -> None:
    home = small_disk / "runs"
    full = cli("train", *ARGS, "tracking.enabled=true", check=False)
    assert full.returncode == 2, full.stdout + full.stderr
    assert "the disk is full" in full.stderr and "Traceback" not in full.stderr
    with sqlite3.connect(home / "mlflow.db") as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not list(home.glob("train/*/0-rl/done.json"))  # nothing half-written was published
    assert any(complete(cp) for cp in _checkpoints(home))  # it filled up mid-training, after a whole save
    subprocess.run(["mount", "-o", "remount,size=600m", str(small_disk)], check=True)
    again = cli("train", *ARGS, "tracking.enabled=true")
    (done,) = home.glob("train/*/0-rl/done.json")
    assert json.loads(done.read_text())["steps"] == 12 and "checkpoint:" in again.stdout
    assert "resum" in again.stdout + again.stderr
