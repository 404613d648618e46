"""The verifiers tier (`make test-verifiers`): `vf-eval` runs ttt-lab's environment offline against
the test OpenAI-compatible server. Skipped, saying why, where verifiers is not installed (the
default environment) or the offline wheelhouse for its chat harness is missing."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.players.endpoint import running_endpoint

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(os.environ.get("TTT_LAB_VF_WHEELHOUSE", Path(sys.prefix) / "wheelhouse"))
BIN = Path(sys.executable).parent
UV_CACHE = Path(sys.prefix) / "uv-cache"
"""uv's cache for the chat harness's environment, beside the wheelhouse: empty in a new environment,
so the first run proves the harness installs offline (the interpreter is this one's, whose wheels the
wheelhouse holds)."""


def why_not() -> str | None:
    if importlib.util.find_spec("verifiers") is None:
        return "verifiers is not installed in this environment: `make test-verifiers` builds one (.venv-verifiers)"
    if not (BIN / "uv").is_file() and shutil.which("uv") is None:
        return "uv (which runs verifiers' chat harness) is not installed: `make test-verifiers` installs it"
    if not WHEELHOUSE.is_dir():
        return f"no wheelhouse for the chat harness at {WHEELHOUSE}: `make test-verifiers` downloads one"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = why_not()
    for item in items:
        if reason and item.get_closest_marker("verifiers") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def endpoint() -> Iterator[str]:
    with running_endpoint() as url:
        yield url


def offline_env(tmp: Path) -> dict[str, str]:
    """verifiers' chat harness runs `uv sync --script` at start: offline, uv resolves it from the
    wheelhouse (an empty default index, no Python downloads)."""
    empty = tmp / "empty-index"
    empty.mkdir(exist_ok=True)
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", UV_DEFAULT_INDEX=empty.as_uri(),
                UV_FIND_LINKS=str(WHEELHOUSE), UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1",
                UV_PYTHON=getattr(sys, "_base_executable", sys.executable), UV_CACHE_DIR=str(UV_CACHE),
                TTT_LAB_HOME=str(tmp / "home"), TTT_LAB_TEST="1")


def vf_eval(tmp: Path, base_url: str, model: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "vf-eval"), "ttt-lab-verifiers", "-m", model, "--client.base-url", base_url, "--no-push",
           "-o", str(tmp / "vf"), "--clean", "True", "-c", "4", *args]
    return subprocess.run(cmd, cwd=tmp, env=offline_env(tmp), capture_output=True, text=True, timeout=600)


def traces(tmp: Path) -> list[dict]:
    (path,) = (tmp / "vf").glob("*/traces.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
