"""Evaluations and audits through the API."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ttt_lab.api._config import ConfigLike, loaded
from ttt_lab.errors import TttLabError

if TYPE_CHECKING:
    from ttt_lab.audit.checks import Audit
    from ttt_lab.evaluation.suite import SuiteResult
    from ttt_lab.evaluation.summary import Summary

AuditKind = Literal["opponent", "dataset", "policy"]


@dataclass(frozen=True)
class EvalResult:
    results: list[SuiteResult]
    """One per suite opponent: its games and their summary."""
    run_id: str | None
    transcript: Path | None
    seconds: float
    player: str
    config_hash: str
    suite: str
    experiment: str
    """The MLflow experiment of `run_id`."""
    tracking_uri: str
    failures: dict[str, int]
    """Endpoint failures counted as invalid moves, by kind (an OpenAI-compatible player's)."""

    @property
    def summaries(self) -> list[Summary]:
        return [r.summary for r in self.results]

    @property
    def games(self) -> int:
        return sum(r.summary.games for r in self.results)

    @property
    def metrics(self) -> dict[str, float]:
        """Flat metrics as logged: `eval/<opponent>/draw_rate`, …"""
        out: dict[str, float] = {}
        for r in self.results:
            out.update(r.summary.metrics())
        return out


def evaluate(cfg: ConfigLike = None) -> EvalResult:
    """Play the configured player against the evaluation suite (`ttt-lab eval`)."""
    from ttt_lab.evaluation.run import run_eval
    from ttt_lab.players.factory import build_player

    config = loaded(cfg)
    player = build_player(config.cfg)
    out = run_eval(config, player)
    c = config.cfg
    return EvalResult(list(out.results), out.run_id, out.transcript, out.play_seconds, repr(player),
                      config.config_hash, c.eval.suite, c.tracking.experiment, c.tracking.uri,
                      dict(getattr(player, "failures", None) or {}))


@dataclass(frozen=True)
class AuditResult:
    audit: Audit
    """Its checks (name, status PASS/WARN/FAIL/SKIP, value, detail) and data."""
    paths: list[Path]
    """audit.json, audit.md, audit.html."""
    run_id: str | None
    experiment: str
    """The MLflow experiment of `run_id`."""

    @property
    def status(self) -> str:
        return self.audit.status

    @property
    def failed(self) -> list[str]:
        from ttt_lab.audit.checks import FAIL

        return [c.name for c in self.audit.checks if c.status == FAIL]


def audit(kind: AuditKind, cfg: ConfigLike = None, *, file: str | os.PathLike[str] | None = None) -> AuditResult:
    """Bias audit of the configured opponent, training dataset (or a saved dataset.jsonl, `file`)
    or policy; writes audit.json/.md/.html under audit.out and, when tracking is on, an MLflow run."""
    from ttt_lab.audit import output
    from ttt_lab.audit.run import KINDS, run_kind, tracking_job
    from ttt_lab.config.load import config_hash

    if kind not in KINDS:
        raise TttLabError(f"Unknown audit '{kind}'. Choose one of: {', '.join(KINDS)} "
                          "(e.g. `ttt-lab audit opponent tie_break=first`).")
    if file is not None and kind != "dataset":
        raise TttLabError("--file only applies to `ttt-lab audit dataset` (a saved dataset.jsonl).")
    config = loaded(cfg)
    logger = None
    if config.cfg.tracking.enabled:
        from ttt_lab.tracking.background import BackgroundLogger

        logger = BackgroundLogger(config.cfg.tracking.uri, config.cfg.tracking.artifacts)
    try:
        found = run_kind(kind, config, Path(file) if file is not None else None)
    except BaseException:
        if logger is not None:
            logger.cancel()
        raise
    folder = Path(config.cfg.audit.out) / f"{kind}-{config_hash({'all': config.tree})}"
    paths = output.write(found, folder)
    run_id = logger.log(tracking_job(config, found, paths)) if logger is not None else None
    return AuditResult(found, list(paths), run_id, config.cfg.tracking.experiment)
