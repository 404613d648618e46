"""A KV cache for batched multi-turn rollouts: written in place, read only as far as it is filled.

transformers' `StaticCache` writes in place but hands attention the whole preallocated
length on every call, so a decode step attends over the longest game the rollout could
ever reach; `DynamicCache` attends over the filled part but copies the whole cache on
every call (`torch.cat`). This cache preallocates once and returns views of the filled
prefix, so attention costs what the games have played so far. `reorder_cache(rows)` (the
hook every transformers cache layer has) drops finished games from the batch in place, so
they stop costing anything at all.
"""

from __future__ import annotations

import contextlib
from typing import cast

import torch
from transformers.cache_utils import Cache, DynamicLayer


class GrowingLayer(DynamicLayer):
    """One layer's keys and values in a preallocated buffer of `capacity` positions."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.rows: torch.Tensor | None = None
        """When set, the forward pass computes only these rows (`GrowingCache.only`)."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        b, h, _, d = key_states.shape
        self.device = key_states.device
        self._keys = key_states.new_empty((b, h, self.capacity, d))
        self._values = value_states.new_empty((b, h, self.capacity, value_states.shape[-1]))
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            raise RuntimeError(f"rollout exceeded its cache of {self.capacity} tokens")
        if self.rows is not None:
            # the other rows skip these positions: masked out, but attention still multiplies
            # them, and uninitialised memory can hold NaN
            self._keys[:, :, self.length : end] = 0
            self._values[:, :, self.length : end] = 0
            self._keys[self.rows, :, self.length : end] = key_states
            self._values[self.rows, :, self.length : end] = value_states
        else:
            self._keys[:, :, self.length : end] = key_states
            self._values[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
        if self.rows is not None:
            return self.keys.index_select(0, self.rows), self.values.index_select(0, self.rows)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Move rows `indices` to the front, in place, copying only the filled positions."""
        if self.is_initialized:
            k, end = len(indices), self.length
            self._keys[:k, :, :end] = self._keys[:, :, :end].index_select(0, indices)
            self._values[:k, :, :end] = self._values[:, :, :end].index_select(0, indices)
            self._keys, self._values = self._keys[:k], self._values[:k]
            self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]

    def reorder_cache(self, beam_idx: torch.Tensor) -> None:
        self.batch_select_indices(beam_idx)


class GrowingCache(Cache):
    """One `GrowingLayer` per decoder layer of `num_layers`."""

    def __init__(self, num_layers: int, capacity: int) -> None:
        super().__init__(layers=[GrowingLayer(capacity) for _ in range(num_layers)])

    def growing_layers(self) -> list[GrowingLayer]:
        """`self.layers`, typed: every layer of this cache is a `GrowingLayer` (made in `__init__`)."""
        return cast(list[GrowingLayer], self.layers)

    @contextlib.contextmanager
    def only(self, rows: torch.Tensor):
        """Within: a forward pass of the batch's rows `rows` alone. Their keys and values are
        written in place; the other rows get the same positions unwritten (their attention mask
        must say 0 there), and attention reads the rows `rows` only."""
        for layer in self.growing_layers():
            layer.rows = rows
        try:
            yield
        finally:
            for layer in self.growing_layers():
                layer.rows = None
