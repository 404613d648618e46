"""Datasets of examples: a pure function of (settings, seed).

An example fixes everything random about one game except the model's replies: its seed
(which drives the opponent's per-turn choices), the opponent's random-move probability,
who moves first and which symbol the model is shown. With `sampling='stratified'` the
range [p_min, p_max] is cut into `num_strata` bins and every consecutive batch of
`examples_per_batch` examples holds every bin equally often (within one); the leftover
slots of uneven batches rotate over the bins so the whole dataset stays balanced too.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from ttt_lab.env.settings import DatasetConfig
from ttt_lab.game.seeding import derive_seed


@dataclass(frozen=True, slots=True)
class Example:
    index: int
    seed: int
    p_random: float
    model_first: bool
    model_symbol: str
    stratum: int
    """Bin of `p_random` in [0, num_strata); -1 for iid sampling."""

    def to_dict(self) -> dict:
        return asdict(self)


def batch_strata(batch: int, size: int, num_strata: int) -> list[int]:
    """The strata of one batch of `size` examples: each equally often, leftovers rotating."""
    base, extra = divmod(size, num_strata)
    strata = [k for k in range(num_strata) for _ in range(base)]
    start = (batch * extra) % num_strata
    strata += [(start + j) % num_strata for j in range(extra)]
    return strata


def _batches(cfg: DatasetConfig) -> Iterator[tuple[int, int]]:
    for b, start in enumerate(range(0, cfg.size, cfg.examples_per_batch)):
        yield b, min(cfg.examples_per_batch, cfg.size - start)


def _first_and_symbol(cfg: DatasetConfig, position: int, rng: random.Random) -> tuple[bool, str]:
    fp = cfg.first_player
    model_first = (
        position % 2 == 0 if fp == "alternate" else fp == "model" if fp in ("model", "opponent")
        else rng.random() < 0.5
    )
    ms = cfg.model_symbol
    if ms == "alternate":
        symbol = "X" if (position // 2) % 2 == 0 else "O"
    elif ms == "random":
        symbol = "X" if rng.random() < 0.5 else "O"
    else:
        symbol = ms
    return model_first, symbol


def make_dataset(cfg: DatasetConfig, seed: int) -> list[Example]:
    """The examples of `cfg` for `seed`, in the order training consumes them."""
    cfg.validate()
    rng = random.Random(derive_seed(seed, 0x5EED))
    width = (cfg.p_max - cfg.p_min) / cfg.num_strata
    out: list[Example] = []
    for b, size in _batches(cfg):
        if cfg.sampling == "stratified":
            strata = batch_strata(b, size, cfg.num_strata)
            rng.shuffle(strata)
        else:
            strata = [-1] * size
        for pos, k in enumerate(strata):
            u = rng.random()
            p = cfg.p_min + (k + u) * width if k >= 0 else cfg.p_min + u * (cfg.p_max - cfg.p_min)
            model_first, symbol = _first_and_symbol(cfg, pos, rng)
            i = len(out)
            out.append(Example(i, derive_seed(seed, i), min(p, cfg.p_max), model_first, symbol, k))
    return out


def batches(examples: list[Example], examples_per_batch: int) -> list[list[Example]]:
    return [examples[i : i + examples_per_batch] for i in range(0, len(examples), examples_per_batch)]


def dataset_jsonl(examples: list[Example]) -> str:
    """Canonical JSON lines: byte-identical for the same settings and seed in any process."""
    return "".join(json.dumps(e.to_dict(), separators=(",", ":")) + "\n" for e in examples)
