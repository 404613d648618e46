"""Blocks of a study: parameters whose values repeat the whole comparison (a second warm-up seed,
`train.sft.seed: 0,1`, declared `blocks: [train.sft.seed]`). A condition is then a trial's
overrides without its seed and its block keys; its runs are keyed (block, seed), so conditions
are paired within a block, and each block can also be decided on its own."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ttt_lab.stats.pairing import seed_of

Key = int | tuple[str, int]
"""A run's place in its condition: its seed, or (block, seed) in a blocked study."""


def split(overrides: Sequence[str], blocks: Sequence[str]) -> tuple[str, str]:
    """(the condition: overrides without seed and block keys, the block: the block keys' values)."""
    keep = [o for o in overrides if not o.startswith("seed=") and o.partition("=")[0] not in blocks]
    block = " ".join(o for o in overrides if o.partition("=")[0] in blocks)
    return " ".join(keep) or "(baseline)", block


def by_condition(runs: Iterable[tuple[Sequence[str], int, float]], blocks: Sequence[str]
                 ) -> tuple[dict[str, dict[Key, float]], dict[str, dict[str, dict[int, float]]]]:
    """condition -> key -> value over every block, and block -> condition -> seed -> value (empty
    without blocks)."""
    out: dict[str, dict[Key, float]] = {}
    per: dict[str, dict[str, dict[int, float]]] = {}
    for overrides, seed, value in runs:
        condition, block = split(overrides, blocks)
        if blocks:
            out.setdefault(condition, {})[(block, seed)] = value
            per.setdefault(block, {}).setdefault(condition, {})[seed] = value
        else:
            out.setdefault(condition, {})[seed] = value
    return out, per


__all__ = ["Key", "by_condition", "seed_of", "split"]
