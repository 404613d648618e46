"""Training through the API: one process, or the processes `train.processes` asks for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ttt_lab import log
from ttt_lab.api._config import ConfigLike, loaded
from ttt_lab.errors import TttLabError

if TYPE_CHECKING:
    from ttt_lab.evaluation.summary import Paired, Summary

LOG = log.get("api")


@dataclass(frozen=True)
class TrainResult:
    checkpoint: Path
    """The final policy checkpoint (a transformers model folder)."""
    run_id: str | None
    """The MLflow run (None with tracking.enabled=false)."""
    final: list[Summary]
    """The final policy against each evaluation opponent (rates with 95 % intervals); empty in
    every process but rank 0 of several."""
    sft: list[Summary] | None
    """The warm-up checkpoint on the same games (None without SFT)."""
    gains: list[Paired]
    """Final against warm-up, game by game, per opponent."""
    seconds: float
    config_hash: str
    games: int
    """Games per opponent of a sampled evaluation (`eval.games`)."""

    @property
    def metrics(self) -> dict[str, float]:
        """Flat metrics: `final/<opponent>/draw_rate`, `sft/<opponent>/…`, `gain/<opponent>/p_value`."""
        out: dict[str, float] = {}
        for s in self.final:
            out.update(s.metrics("final"))
        for s in self.sft or []:
            out.update(s.metrics("sft"))
        for g in self.gains:
            out.update(g.metrics("gain"))
        return out


def train(cfg: ConfigLike = None, *, fresh: bool = False) -> TrainResult:
    """Train (SFT warm-up, then the RL phases); the same config resumes where it stopped, `fresh`
    starts over. One process: for train.processes > 1 use `ttt-lab train` or `in_processes` (they
    start the processes), or call this in each process of a `torchrun`/`accelerate launch`.
    Progress goes to the `ttt_lab` logger (`logging.basicConfig(level=logging.INFO)` shows it)."""
    from ttt_lab.train import distributed
    from ttt_lab.train.pipeline import train as run_pipeline

    config = loaded(cfg)
    n = config.cfg.train.processes
    if n > 1 and distributed.world_size() <= 1:
        raise TttLabError(f"train.processes={n} needs {n} processes: run `ttt-lab train` with these overrides (it "
                          "starts them), or call ttt_lab.train in each process of torchrun / accelerate launch; in "
                          "this process pass train.processes=1.")
    out = run_pipeline(config, fresh=fresh)
    return TrainResult(out.checkpoint, out.run_id, list(out.final), out.sft, list(out.gains), out.seconds,
                       config.config_hash, config.cfg.eval.games)


def in_processes(cfg: ConfigLike, entry: Callable[..., int], args: tuple[object, ...]) -> int | None:
    """Where `train.processes` > 1 and this process is not already one of several: `entry(*args)`
    (a function that calls `train`) in that many new processes, and rank 0's exit code. In one of
    several processes already (torchrun, srun): `entry(*args)` here. None: train in this process."""
    from ttt_lab.train import distributed

    config = loaded(cfg)
    n = config.cfg.train.processes
    if distributed.world_size() > 1:  # started by torchrun / accelerate launch / srun: this is a rank
        return entry(*args)
    if n <= 1:
        return None
    LOG.info(f"training in {n} processes (train.processes={n}); rank 0 reports")
    return distributed.launch(entry, args, n, config.cfg.model.device)
