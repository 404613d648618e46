"""Two processes training the same config share one folder: one trains, the other waits and reuses."""

from pathlib import Path

from tests.conftest import start
from ttt_lab.config.load import load
from ttt_lab.locks import file_lock

ARGS = ["experiment=smoke", "steps=2", "tracking.enabled=false"]
WAITING = "another process is training this config"


def test_two_processes_on_one_config_train_it_once(home: Path) -> None:
    folder = home / "train" / load(ARGS).config_hash
    procs = []
    with file_lock(folder.with_name(folder.name + ".lock")):  # both start while the config is taken
        for _ in range(2):
            procs.append(start("train", *ARGS))
            procs[-1].wait_for(WAITING)
    for p in procs:
        assert p.finish() == 0, p.text
    texts = [p.text for p in procs]
    assert sum("done, skipping" in t for t in texts) == 1, texts  # the second one reused the first's phase
    tables = [t[t.index("greedy policy"):t.index("checkpoint:")] for t in texts]
    assert tables[0] == tables[1]
    assert len([p for p in folder.iterdir() if p.name.endswith(".work")]) == 0
