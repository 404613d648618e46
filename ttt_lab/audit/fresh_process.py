"""Replaying an opponent in a fresh interpreter: replies must not depend on the process.

`python -m ttt_lab.audit.fresh_process` reads {opponent, p_random, boards, seeds} as JSON on
stdin, builds the opponent the way every command does, and prints its replies as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

from ttt_lab.config.schema import OpponentConfig
from ttt_lab.errors import TttLabError


class Replay:
    """The opponent's replies to `boards` x `seeds`, computed in a fresh interpreter that
    starts at once and runs alongside the audit (a second core does the work)."""

    def __init__(self, cfg: OpponentConfig, p: float, boards: list[str], seeds: list[int]) -> None:
        request = {"opponent": dataclasses.asdict(cfg), "p_random": p, "boards": boards, "seeds": seeds}
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(x for x in sys.path if x and os.path.isdir(x))
        self._proc = subprocess.Popen([sys.executable, "-m", "ttt_lab.audit.fresh_process"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self._request = json.dumps(request)

    def result(self) -> list[list[int]]:
        out, err = self._proc.communicate(self._request, timeout=120)
        if self._proc.returncode != 0:
            raise TttLabError(f"Replaying the opponent in a fresh process failed: {err.strip()[-500:]} "
                              "Make sure the opponent's module is importable (on PYTHONPATH), or set "
                              "audit.opponent.processes=false to skip the cross-process check.")
        return json.loads(out)


def main() -> None:
    request = json.loads(sys.stdin.read())
    cfg = OpponentConfig(**request["opponent"])
    from ttt_lab.config.build import build_opponent, opponent_factory

    opponent = opponent_factory(cfg)(request["p_random"]) or build_opponent(cfg)
    out = [[as_cell(opponent.reply(b, s)) for s in request["seeds"]] for b in request["boards"]]
    sys.stdout.write(json.dumps(out) + "\n")  # the reply the parent process reads


def as_cell(move: object) -> int:
    """A reply as a cell number, -1 for anything that is not one (both processes read replies alike)."""
    return move if isinstance(move, int) and not isinstance(move, bool) and 0 <= move < 9 else -1


if __name__ == "__main__":
    main()
