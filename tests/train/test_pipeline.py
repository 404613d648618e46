"""Two processes training the same config share one folder: one trains, the other waits and reuses."""

import queue
import subprocess
import threading
from pathlib import Path

from tests.conftest import BIN
from ttt_lab.config.load import load
from ttt_lab.locks import file_lock

ARGS = ["experiment=smoke", "steps=2", "tracking.enabled=false"]
WAITING = "another process is training this config"


def lines(proc: subprocess.Popen) -> queue.Queue:
    """Each stdout line as it comes (None at the end), read on a thread so a wait can have a deadline."""
    q: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            q.put(line)
        q.put(None)

    threading.Thread(target=read, daemon=True).start()
    return q


def wait_for(q: queue.Queue, text: str, seen: list[str], deadline_s: float = 120) -> None:
    while True:
        line = q.get(timeout=deadline_s)
        assert line is not None, f"exited before printing {text!r}:\n{''.join(seen)}"
        seen.append(line)
        if text in line:
            return


def test_two_processes_on_one_config_train_it_once(home: Path) -> None:
    folder = home / "train" / load(ARGS).config_hash
    procs, outs = [], [[], []]
    with file_lock(folder.with_name(folder.name + ".lock")):  # both start while the config is taken
        for out in outs:
            p = subprocess.Popen([str(BIN), "train", *ARGS], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
            procs.append((p, lines(p)))
            wait_for(procs[-1][1], WAITING, out)
    for (p, q), out in zip(procs, outs, strict=True):
        while (line := q.get(timeout=300)) is not None:
            out.append(line)
        assert p.wait(timeout=60) == 0, "".join(out)
    texts = ["".join(o) for o in outs]
    assert sum("done, skipping" in t for t in texts) == 1, texts  # the second one reused the first's phase
    tables = [t[t.index("greedy policy"):t.index("checkpoint:")] for t in texts]
    assert tables[0] == tables[1]
    assert len([p for p in folder.iterdir() if p.name.endswith(".work")]) == 0
