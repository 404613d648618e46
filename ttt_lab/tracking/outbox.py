"""What a run sends to a tracking *server*, kept in order until the server has it.

A training outlives a tracking server that is restarted or drops for a while: a send that
fails because the server cannot be reached is kept (with everything after it, in order) and
retried at the next send, at most every RETRY_EVERY_S; the run goes on and says so once. At
the end of the run the outbox waits up to END_WAIT_S for the server; if it is still gone,
what was never delivered is written to `<home>/tracking-fallback/<run id>.json` and
`ttt-lab runs sync` sends it later. Local stores (SQLite) are not servers: their errors are
real errors and are raised at once.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RETRY_EVERY_S = 10.0
END_WAIT_S = 60.0
FALLBACK = "tracking-fallback"


def is_outage(e: BaseException) -> bool:
    """MLflow's words for a server that cannot be reached or is failing (not a refused request)."""
    text = str(e)
    return "API request to" in text and ("failed with exception" in text or "error code 5" in text)


@dataclass
class Op:
    """One send: `kind` is metrics, params, tags, text, artifact or status."""

    kind: str
    data: Any
    extra: str | None = None


@dataclass
class Outbox:
    send: Callable[[Op], None]
    """Delivers one op (raises on failure)."""
    remote: bool
    """A tracking server (outages are waited out) or a local store (errors raise)."""
    pending: list[Op] = field(default_factory=list)
    down_since: float | None = None
    last_try: float = 0.0

    def put(self, op: Op) -> None:
        self.pending.append(op)
        if self.down_since is None or time.monotonic() - self.last_try >= RETRY_EVERY_S:
            self.drain()

    def drain(self) -> bool:
        """Send what is pending, in order; False when the server is still unreachable."""
        self.last_try = time.monotonic()
        while self.pending:
            try:
                self.send(self.pending[0])
            except Exception as e:
                if not (self.remote and is_outage(e)):
                    raise
                if self.down_since is None:
                    self.down_since = time.monotonic()
                    print(f"warning: the tracking server cannot be reached ({_short(e)}); the run goes on and "
                          f"keeps what it logs until the server is back.", file=sys.stderr, flush=True)
                return False
            self.pending.pop(0)
        if self.down_since is not None:
            print(f"the tracking server is back after {time.monotonic() - self.down_since:.0f} s; "
                  "everything logged meanwhile is sent.", file=sys.stderr, flush=True)
            self.down_since = None
        return True

    def close(self, folder: Path, run_id: str, wait_s: float = END_WAIT_S) -> Path | None:
        """Deliver everything, waiting up to `wait_s` for the server; else write it to a file
        under `folder` (returned) that `ttt-lab runs sync` sends later."""
        deadline = time.monotonic() + wait_s
        while not self.drain():
            if time.monotonic() >= deadline:
                return self._write(folder, run_id)
            time.sleep(2.0)
        return None

    def _write(self, folder: Path, run_id: str) -> Path:
        from ttt_lab.atomic import write_text

        path = folder / FALLBACK / f"{run_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        ops = [{"kind": o.kind, "data": o.data, "extra": o.extra} for o in self.pending]
        write_text(path, json.dumps({"run_id": run_id, "ops": ops}))
        print(f"warning: the tracking server is still unreachable; what the run logged meanwhile is in {path}. "
              "Send it with `ttt-lab runs sync` once the server is back.", file=sys.stderr, flush=True)
        return path


def read_fallback(path: Path) -> tuple[str, list[Op]]:
    raw = json.loads(path.read_text())
    return raw["run_id"], [Op(o["kind"], o["data"], o.get("extra")) for o in raw["ops"]]


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:160] + ("..." if len(text) > 160 else "")
