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
    """Send what runs kept in `<home>/tracking-fallback/` while their tracking server was gone
    (the journals of runs that ended or were killed) to the
    store, in order; each file is removed once delivered. A journal still held by its live run is
    left to that run. (run id, ops sent) per file."""
    from ttt_lab.tracking.outbox import FALLBACK, JOURNAL_SUFFIX, Journal, JournalBusy

    folder = Path(store.home) / FALLBACK
    sent = []
    for path in sorted(folder.glob(f"*{JOURNAL_SUFFIX}")):
        try:
            journal, contents = Journal.take(path)
        except (JournalBusy, FileNotFoundError):
            continue  # its run is alive and sends its own, or has just delivered everything
        try:
            run = _run_for(store, path, contents.run_id or path.name.removesuffix(JOURNAL_SUFFIX))
        except BaseException:
            journal.close()
            raise
        if not run.replay(journal, contents):
            raise _unreachable(store, path)
        sent.append((run.run_id, len(contents.unacked)))
    return sent


def _run_for(store, path: Path, run_id: str):
    from ttt_lab.tracking.store import TrackedRun, TrackingError

    run = TrackedRun.reopen(store, run_id, running=False)
    if run is None:
        raise TrackingError(f"{path} is for run {run_id}, which {store.uri} does not have. Point tracking.uri "
                            "at the store that run was started in, or move the file aside.")
    return run


def _unreachable(store, path: Path):
    from ttt_lab.tracking.store import TrackingError

    return TrackingError(f"the tracking server {store.uri} still cannot be reached; {path} is kept.")
