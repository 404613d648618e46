import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import forked_cli

settings.register_profile("ttt", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ttt"))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TTT_LAB_TORCH_THREADS", "1")  # two test workers share two cores
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BIN = Path(sys.executable).parent / "ttt-lab"


@pytest.fixture(scope="session")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs/ folder with an already-migrated MLflow store, copied by `home` (migrations take seconds)."""
    home = tmp_path_factory.mktemp("home-template")
    from ttt_lab.tracking.store import open_store

    open_store(f"sqlite:///{home}/mlflow.db", str(home / "mlartifacts"))
    return home


@pytest.fixture
def home(tmp_path: Path, shared_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh TTT_LAB_HOME for one test, for this process and its subprocesses."""
    h = tmp_path / "runs"
    shutil.copytree(shared_home, h)
    monkeypatch.setenv("TTT_LAB_HOME", str(h))
    return h


def cli(*args: str, check: bool = True, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run the installed `ttt-lab` console script (forked from a process that has done the heavy
    imports, see `tests/cli_zygote.py`; `TTT_LAB_TEST_FORK=0`: a new process every call)."""
    out = forked_cli.run(list(args), timeout=timeout, **kw)
    if check and out.returncode != 0:
        raise AssertionError(f"ttt-lab {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small untrained checkpoint built offline and saved like any other."""
    import torch

    torch.set_num_threads(1)
    from ttt_lab.config.schema import ModelConfig
    from ttt_lab.players.tiny import build_tiny

    cfg = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    return build_tiny(tmp_path_factory.mktemp("ckpt") / "tiny", cfg, seed=0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """A process's stdout lines as they come, read on a thread so a wait for one has a deadline."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.seen, self._q = proc, [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def wait_for(self, text: str, deadline_s: float = 120) -> None:
        while True:
            line = self._q.get(timeout=deadline_s)
            assert line is not None, f"exited before printing {text!r}:\n{self.text}"
            self.seen.append(line)
            if text in line:
                return

    def finish(self, deadline_s: float = 300) -> int:
        """Read to the end; the exit code."""
        while (line := self._q.get(timeout=deadline_s)) is not None:
            self.seen.append(line)
        return self.proc.wait(timeout=60)

    @property
    def text(self) -> str:
        return "".join(self.seen)


def start(*args: str, **kw) -> Lines:
    """Start the installed `ttt-lab` with stdout and stderr read together, line by line."""
    return Lines(forked_cli.popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw))


FAILING_SWEEP = ["max_new_tokens=1,4", "experiment=smoke"]
"""A grid whose first trial fails (a move does not fit in one token) and whose second completes."""


@pytest.fixture(scope="session")
def failing_sweep(tmp_path_factory: pytest.TempPathFactory, shared_home: Path):
    """(home, the sweep's CompletedProcess): one real sweep with a failed trial, shared by the
    sweep and report tests (mark them `xdist_group("failing-sweep")` so one worker runs it)."""
    h = tmp_path_factory.mktemp("failing") / "runs"
    shutil.copytree(shared_home, h)
    out = cli("sweep", *FAILING_SWEEP, check=False, env=dict(os.environ, TTT_LAB_HOME=str(h)))
    return h, out


SMOKE_TRAINING = ["experiment=smoke", "steps=2"]
"""What `smoke_trained` trains: the smoke recipe with two RL steps (a run's first step is then a
part of it, as `ttt-lab reproduce --steps 1` needs)."""


@pytest.fixture(scope="session")
def smoke_home(tmp_path_factory: pytest.TempPathFactory, shared_home: Path) -> Path:
    """The TTT_LAB_HOME `smoke_trained` trains into (its SQLite store holds the run). Shared by the
    session: read it, or copy it to change anything."""
    h = tmp_path_factory.mktemp("smoke-trained") / "runs"
    shutil.copytree(shared_home, h)
    return h


@pytest.fixture(scope="session")
def smoke_trained(smoke_home: Path):
    """One `SMOKE_TRAINING` training in this process through the Python API (`ttt_lab.api.train`),
    tracked in `smoke_home`'s SQLite store, on one torch thread: its `TrainResult` (checkpoint,
    run id, final summaries). For tests that need a trained checkpoint or a logged training run,
    not the `ttt-lab train` command itself."""
    from ttt_lab import api

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TTT_LAB_HOME", str(smoke_home))
        mp.setenv("TTT_LAB_TORCH_THREADS", "1")  # what `api.train` sets torch to (runtime.torch_threads)
        return api.train(SMOKE_TRAINING)


# A small training config on the schema's defaults (the root preset set aside) and a briefly
# warmed-up model, shared by the training and engine tests.
SMALL = ["~experiment", "env.think=off", "player.max_new_tokens=6", "env.max_model_turns=5",
         "train.sft.teacher_p_random=0.0", "train.sft.num_games=120",
         "train.sft.batch_size=16", "batch_size=16", "num_generations=4", "lr=1e-3", "tracking.enabled=false"]


def cfg_for(home: Path, *extra: str):
    from ttt_lab.config.load import load

    return load([*SMALL, f"home={home}", *extra]).cfg


@pytest.fixture(scope="session")
def sft_run(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A briefly warmed-up model: it plays legal moves often enough for rewards to differ."""
    from ttt_lab.train.sft import run_sft

    home = tmp_path_factory.mktemp("sft")
    cfg = cfg_for(home, "train.sft.epochs=10", "train.sft.learning_rate=1e-2")
    return home / "sft", run_sft(cfg, str(tiny_checkpoint), home / "sft")


@pytest.fixture(scope="session")
def named_plans(tmp_path_factory: pytest.TempPathFactory):
    """The shipped studies, each planned once by this test process (`tests.named_plans`); the
    tests that share it are marked `xdist_group("named-plans")`."""
    from tests.named_plans import NamedPlans

    return NamedPlans(tmp_path_factory.mktemp("named-plans") / "runs")


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch):
    """The policies whose trees are expanded through the shared tree cache during the test, in
    order (`tests.policies.count_expansions`); the cache is emptied before and after."""
    from tests.policies import count_expansions
    from ttt_lab.evaluation import trees

    trees.forget()
    yield count_expansions(monkeypatch)
    trees.forget()


def make_noisy(path: Path, *, seed: int = 0) -> Path:
    """The checkpoint at `path`, rewritten with large random weights (normal, sd 0.6): its greedy
    replies depend on every token of the context, so two engines agreeing on them agree on the
    whole computation."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path)
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.6)
    model.save_pretrained(path)
    return path
