"""The tracking store's runs through the API: the latest ones, sending what outages kept, reproducing one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ttt_lab.api._report import _store

if TYPE_CHECKING:
    from ttt_lab.studies.reproduce import Comparison

KEY_PARAMS = ("player.kind", "player.policy", "eval.suite", "seed")
KEY_METRICS = ("eval/optimal/draw_rate", "eval/optimal/loss_rate", "eval/random/win_rate")


@dataclass(frozen=True)
class RunRow:
    run_id: str
    experiment: str
    name: str
    started: datetime
    status: str
    params: dict[str, str] = field(default_factory=dict)
    """The key params (player, suite, seed) the run has."""
    metrics: dict[str, float] = field(default_factory=dict)
    """The key evaluation metrics the run has."""


@dataclass(frozen=True)
class Runs:
    tracking_uri: str
    rows: list[RunRow]


def runs(overrides: Sequence[str] | None = None, *, limit: int = 20) -> Runs:
    """The latest runs of every experiment in the store (`ttt-lab runs list`), newest first."""
    cfg, store = _store(overrides)
    exps = {e.experiment_id: e.name for e in store.client.search_experiments()}
    found = store.client.search_runs(list(exps), max_results=limit, order_by=["attributes.start_time DESC"])
    rows = [RunRow(r.info.run_id, exps.get(r.info.experiment_id, "?"), r.info.run_name or "",
                   datetime.fromtimestamp(r.info.start_time / 1000, UTC), r.info.status,
                   {k: r.data.params[k] for k in KEY_PARAMS if k in r.data.params},
                   {k: r.data.metrics[k] for k in KEY_METRICS if k in r.data.metrics}) for r in found]
    return Runs(cfg.tracking.uri, rows)


@dataclass(frozen=True)
class Synced:
    tracking_uri: str
    sent: list[tuple[str, int]]
    """(run id, ops delivered) per fallback file sent."""


def sync_runs(overrides: Sequence[str] | None = None) -> Synced:
    """Send what runs kept in `<home>/tracking-fallback/` while their server was gone (`ttt-lab runs sync`)."""
    from ttt_lab.tracking.runs import sync_fallbacks

    cfg, store = _store(overrides)
    return Synced(cfg.tracking.uri, sync_fallbacks(store))


def reproduce(run_id: str, *, steps: int | None = None, overrides: Sequence[str] | None = None,
              trust_code: bool = False) -> Comparison:
    """Re-run a logged run from its own resolved config and compare its numbers with the logged
    ones (`ttt-lab reproduce`): every compared point, and the ones that differ (`mismatches`)."""
    from ttt_lab.studies.reproduce import reproduce as rerun

    return rerun(run_id, steps, list(overrides or []), trust_code)
