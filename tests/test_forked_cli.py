"""The tests' forked `ttt-lab` (tests/cli_zygote.py) must look like a new process to the command:
the same output and exit status, the environment, working directory and signals it was given."""

import os
import signal
import subprocess

from tests import forked_cli
from tests.conftest import BIN


def _both(args: list[str], **kw) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    fresh = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=120, **kw)
    return fresh, forked_cli.run(args, timeout=120, **kw)


def test_a_forked_call_prints_and_exits_as_a_new_process_does() -> None:
    fresh, forked = _both(["eval", "player=nonsense"])
    assert fresh.returncode == forked.returncode == 2
    assert (forked.stdout, forked.stderr) == (fresh.stdout, fresh.stderr)


def test_the_child_reads_the_environment_and_working_directory_it_was_given(tmp_path) -> None:
    env = dict(os.environ, TTT_LAB_HOME=str(tmp_path / "elsewhere"))
    fresh, forked = _both(["runs", "list"], env=env, cwd=tmp_path)
    assert str(tmp_path / "elsewhere") in forked.stdout and forked.stdout == fresh.stdout
    (tmp_path / "here.yaml").write_text("name: [unclosed\n")
    fresh, forked = _both(["sweep", "here.yaml"], cwd=tmp_path)  # found relative to the working directory
    assert forked.returncode == fresh.returncode == 2 and "no study file" not in forked.stderr
    assert forked.stderr == fresh.stderr


def test_a_killed_child_reports_the_signal_as_subprocess_does(home) -> None:
    proc = forked_cli.popen(["eval", "player=random", "games=1000000", "tracking.enabled=false"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.poll() is None
    proc.kill()
    assert proc.wait(timeout=60) == -signal.SIGKILL
