"""`train.processes=N`: one training over N processes on this machine (torch.distributed: gloo
on CPU, NCCL on GPUs, through accelerate, which TRL's trainers run on), started with torch's
elastic launcher (what `torchrun` and `accelerate launch` use underneath).

Every process runs the trainers (the SFT warm-up, each RL phase) on its share of the global
batch: an RL phase's `batch_size` games are split into whole GRPO groups, each process plays
its own games (`rollout` keys each game's sampling on its number, so they are the games one
process would play) and computes their gradients; DDP averages them. Rank 0 is the training
as one process runs it: the MLflow run, the console, the evaluations, the SFT cache, the
checkpoints and done markers, resume. The other ranks wait at `barrier` where rank 0 writes
what they read next. Already inside a launched process (`torchrun`, `accelerate launch`,
SLURM's `srun` with torch's variables), nothing is launched again: the ranks given are used."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main() -> bool:
    return rank() == 0


def _group():
    import torch.distributed as dist

    if not dist.is_initialized():
        from accelerate import PartialState

        PartialState(cpu=os.environ.get("TTT_LAB_DEVICE", "cpu") == "cpu")
    return dist


def barrier() -> None:
    """Every rank waits here until all arrive (nothing to wait for in one process)."""
    if world_size() > 1:
        _group().barrier()


def on_main(write: Callable[[], T]) -> T | None:
    """`write()` on rank 0 (what it returns), the others waiting until it is written."""
    out = write() if is_main() else None
    barrier()
    return out


def decide(value: T) -> T:
    """Rank 0's `value`, on every rank: what rank 0 decided (under its locks) the others follow."""
    if world_size() == 1:
        return value
    return gather([value])[0]


def gather(items: list) -> list:
    """Every rank's `items`, concatenated in rank order (the list itself in one process)."""
    if world_size() == 1:
        return items
    dist = _group()
    parts: list = [None] * world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def check_processes(processes: int) -> None:
    """Training splits each batch by `train.processes`: it must be the number of ranks running."""
    from ttt_lab.train.runtime import TrainError

    given = world_size()
    if processes != given:
        where = "one process" if given == 1 else f"one of {given} processes (WORLD_SIZE={given})"
        raise TrainError(f"train.processes={processes}, but this training runs as {where}: each batch is split by "
                         f"train.processes. Start it with `ttt-lab train … train.processes={processes}` (which starts "
                         f"the processes) or `torchrun --nproc_per_node {processes} -m ttt_lab.cli train …`, or set "
                         f"train.processes={given}.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(entry: Callable[..., int], args: tuple, processes: int, device: str) -> int:
    """Run `entry(*args)` in `processes` new processes (ranks 0..N-1); rank 0's exit code."""
    import uuid

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    from ttt_lab.train.runtime import TrainError

    before = os.environ.get("TTT_LAB_TORCH_THREADS")
    threads = int(before or min(os.cpu_count() or 1, 8))
    os.environ["TTT_LAB_TORCH_THREADS"] = str(max(1, threads // processes))
    os.environ.setdefault("OMP_NUM_THREADS", os.environ["TTT_LAB_TORCH_THREADS"])  # accelerate warns when unset
    os.environ["TTT_LAB_DEVICE"] = device
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=processes, run_id=uuid.uuid4().hex,
                          rdzv_backend="c10d", rdzv_endpoint=f"127.0.0.1:{_free_port()}", max_restarts=0,
                          monitor_interval=0.2, start_method="spawn")
    try:
        codes = elastic_launch(config, entry)(*args)
    except ChildFailedError as e:
        if 0 not in e.failures:
            return 2  # rank 0 stopped on an error it printed; the others lost it mid-collective
        first = e.failures[0]
        raise TrainError(f"a training process (rank {first.local_rank}) failed with exit code {first.exitcode}; "
                         "its output is above. Fix what it says, or train in one process (train.processes=1) to "
                         "see the error on its own.") from None
    finally:
        if before is None:
            os.environ.pop("TTT_LAB_TORCH_THREADS", None)
        else:
            os.environ["TTT_LAB_TORCH_THREADS"] = before
    return codes[0]
