"""Starting the test OpenAI-compatible server (`openai_server.py`) in a process of its own."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import free_port


@contextmanager
def running_endpoint() -> Iterator[str]:
    """The server's `/v1` base URL while it runs; stopped on exit."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("openai_server.py")), str(port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a deadline, not a wait: uvicorn's imports take many seconds on a busy machine
    try:
        while True:
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("test server did not start") from None
                time.sleep(0.1)
        yield url + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
