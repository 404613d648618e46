import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests import forked_cli
from tests.conftest import cli, free_port, start


def mlflow_server_pids(port: int) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mlflow" in b" ".join(cmd) and str(port).encode() in cmd:
                pids.append(int(d.name))
    return pids


def test_ui_serves_the_store_and_stops_cleanly(home: Path) -> None:
    cli("eval", "eval.suite=quick", "games=2", "tracking.experiment=ui-check")
    port = free_port()
    proc = forked_cli.popen(["ui", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search?max_results=50"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    names = {e["name"] for e in json.load(r)["experiments"]}
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the UI did not come up"
                time.sleep(0.5)
        assert "ui-check" in names
        assert mlflow_server_pids(port)
    finally:
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired as e:  # chained: an earlier failure in the try block stays visible
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"`ttt-lab ui` did not stop within 60 s of Ctrl-C: {proc.stderr.read()}") from e
    deadline = time.monotonic() + 120  # the server's shutdown, however slow under load, is waited for
    while mlflow_server_pids(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert mlflow_server_pids(port) == []
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not a listener
        s.bind(("127.0.0.1", port))  # nothing listens on the port any more
        s.listen()
    assert f"http://127.0.0.1:{port}" in proc.stdout.read()


def test_ui_refuses_a_port_in_use(home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = cli("ui", "--port", str(port), check=False)
    assert out.returncode == 2
    assert "already in use" in out.stderr and f"--port {port + 1}" in out.stderr


def test_ui_names_a_host_it_cannot_resolve(home: Path) -> None:
    out = cli("ui", "--host", "no-such-host.invalid", check=False)
    assert out.returncode == 2 and "is not an address this machine can resolve" in out.stderr
    assert "already in use" not in out.stderr and "Traceback" not in out.stderr


def test_an_ipv6_host_is_bound_as_ipv6_and_bracketed_in_urls() -> None:
    """`--host ::1` was checked on an IPv4 socket, so a free port read as one in use."""
    from ttt_lab.api._serve import http_base, port_free

    assert http_base("::1", 5000) == "http://[::1]:5000" and http_base("127.0.0.1", 80) == "http://127.0.0.1:80"
    try:
        taken = socket.socket(socket.AF_INET6)
        taken.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    with taken:
        taken.listen()
        port = taken.getsockname()[1]
        assert not port_free("::1", port)
    assert port_free("::1", port)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_optuna_dashboard_serves_a_study_and_stops_cleanly(home: Path) -> None:
    import optuna

    storage = f"sqlite:///{home}/optuna.db"
    study = optuna.create_study(study_name="dash-check", storage=storage, direction="maximize")
    study.optimize(lambda t: t.suggest_float("lr", 0.0, 1.0), n_trials=3)
    port = free_port()
    lines = start("ui", "--optuna", "dash-check", "--port", str(port), start_new_session=True)
    try:
        lines.wait_for("Optuna dashboard ready at", deadline_s=120)
        assert f"http://127.0.0.1:{port}/dashboard/studies/" in lines.text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=10) as r:
            studies = json.load(r)["study_summaries"]
        assert [(s["study_name"], s["directions"]) for s in studies] == [("dash-check", ["maximize"])]
        sid = studies[0]["study_id"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{sid}", timeout=10) as r:
            trials = json.load(r)["trials"]
        assert sorted(t["params"][0]["param_internal_value"] for t in trials) == sorted(
            t.params["lr"] for t in study.trials)
    finally:
        os.kill(lines.proc.pid, signal.SIGINT)
    assert lines.finish(deadline_s=60) == 0, lines.text
    deadline = time.monotonic() + 120  # the dashboard's shutdown, however slow under load, is waited for
    while _listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _listening(port)  # the dashboard's process went with the command


def test_the_optuna_dashboard_of_an_unknown_study_names_the_known_ones(home: Path) -> None:
    import optuna

    optuna.create_study(study_name="known-one", storage=f"sqlite:///{home}/optuna.db")
    out = cli("ui", "--optuna", "nope", check=False)
    assert out.returncode == 2 and "no study 'nope'" in out.stderr and "known-one" in out.stderr
