"""Opening an MLflow run of any kind (train, eval, audit, trial, sweep) with the tags every
run carries: its kind, its config hash and seed, the command and overrides that made it,
the commit and the package versions (`provenance`), plus the kind's own tags."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ttt_lab.tracking import keys, provenance

KINDS = ("train", "eval", "audit", "trial", "sweep")


def run_tags(kind: str, config_hash: str, seed: int, overrides: list[str], command: str | None = None,
             extra: Mapping[str, str] | None = None) -> dict[str, str]:
    if kind not in KINDS:
        raise ValueError(f"unknown run kind {kind!r}; one of {KINDS}")
    tags = provenance.tags(config_hash, seed, command)
    tags |= {keys.KIND: kind, keys.OVERRIDES: " ".join(overrides)}
    return tags | dict(extra or {})


def open_run(store, experiment: str, kind: str, name: str, *, config_hash: str, seed: int, overrides: list[str],
             command: str | None = None, tags: Mapping[str, str] | None = None, tree: Mapping[str, Any] | None = None,
             parent_run_id: str | None = None):
    """A new `TrackedRun`; `tree` (the resolved config) is logged as flattened params."""
    from ttt_lab.tracking.store import TrackedRun, flatten

    run = TrackedRun(store, experiment, name=name, tags=run_tags(kind, config_hash, seed, overrides, command, tags),
                     parent_run_id=parent_run_id)
    if tree is not None:
        run.log_params(flatten(tree))
    return run


def sync_fallbacks(store) -> list[tuple[str, int]]:
    """Send what runs left in `<home>/tracking-fallback/` (their tracking server was gone at their
    end) to the store; each file delivered is removed. (run id, ops sent) per file."""
    from ttt_lab.tracking.outbox import FALLBACK, read_fallback
    from ttt_lab.tracking.store import TrackedRun, TrackingError

    sent = []
    for path in sorted((Path(store.home) / FALLBACK).glob("*.json")):
        run_id, ops = read_fallback(path)
        run = TrackedRun.reopen(store, run_id)
        if run is None:
            raise TrackingError(f"{path} is for run {run_id}, which {store.uri} does not have. Point tracking.uri "
                                "at the store that run was started in, or move the file aside.")
        if not run.resend(ops):
            raise TrackingError(f"the tracking server {store.uri} still cannot be reached; {path} is kept.")
        path.unlink()
        sent.append((run_id, len(ops)))
    return sent
