"""Nested config trees as dotted keys (lists of sections indexed: `train.phases.0.steps`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flat_items(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping) and v:
            out.update(flat_items(v, key))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            for i, x in enumerate(v):
                out.update(flat_items(x, f"{key}.{i}"))
        else:
            out[key] = v
    return out
