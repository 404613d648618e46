"""`ttt-lab eval`: play the suite, show the table, write the transcript, track the run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ttt_lab import log
from ttt_lab.config.load import Loaded
from ttt_lab.config.schema import SuiteEntry
from ttt_lab.env.driver import Player
from ttt_lab.evaluation import tables
from ttt_lab.evaluation.exact import EXPLOITER, exact_suite, reply_distribution, resolve_mode
from ttt_lab.evaluation.suite import SuiteResult, entries, play_suite
from ttt_lab.progress import games_progress
from ttt_lab.tracking import keys

LOG = log.get("evaluation")


@dataclass
class EvalOutcome:
    results: list[SuiteResult]
    transcript: Path | None
    run_id: str | None
    play_seconds: float
    tracking_seconds: float
    mode: str = "sampled"
    note: str = ""
    """Why auto mode sampled (empty otherwise)."""


def _start_run(loaded: Loaded, player: Player, mode: str):
    from ttt_lab.tracking.runs import open_run
    from ttt_lab.tracking.store import open_store

    cfg = loaded.cfg
    store = open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
    return open_run(store, cfg.tracking.experiment, "eval", f"eval-{cfg.player.kind}-{loaded.config_hash[:6]}",
                    config_hash=loaded.config_hash, seed=cfg.seed, overrides=loaded.overrides,
                    tags={keys.PLAYER: repr(player), keys.SUITE: cfg.eval.suite, "eval.mode": mode},
                    tree=loaded.logged_tree)


def _finish_run(run, loaded: Loaded, results: list[SuiteResult], transcript: Path | None) -> None:
    from omegaconf import OmegaConf

    for r in results:
        run.log_metrics(r.summary.metrics())
    run.flush()
    run.log_text(OmegaConf.to_yaml(OmegaConf.create(loaded.logged_tree)), "config.yaml")
    run.log_text("\n".join(loaded.overrides) + "\n", "overrides.txt")
    run.log_text(tables.csv_text(results), "eval_table.csv")
    if transcript is not None:
        run.log_artifact(transcript)
    run.end("FINISHED")


def _play(loaded: Loaded, player: Player, mode: str) -> list[SuiteResult]:
    cfg = loaded.cfg
    console = log.console()
    if mode == "exact":
        policy, _ = reply_distribution(cfg, player)
        assert policy is not None
        suite = entries(cfg)
        with games_progress(console) as progress:
            task = progress.add_task(f"exact {cfg.eval.suite}: model turns asked", total=None)
            summaries = exact_suite(policy, cfg, suite, lambda asked: progress.update(task, completed=asked),
                                    exploiter=True)
        entries_ = [*suite, SuiteEntry(EXPLOITER)]  # the best response to this policy, from the same tree
        return [SuiteResult(e, [], s) for e, s in zip(entries_, summaries, strict=True)]  # type: ignore[arg-type]
    total = cfg.eval.games * len(entries(cfg))
    with games_progress(console) as progress:
        task = progress.add_task(f"eval {cfg.eval.suite}", total=total)
        return play_suite(cfg, player, lambda _name, n: progress.advance(task, n))


def choose_mode(loaded: Loaded, player: Player) -> tuple[str, str]:
    """The evaluation mode for this player (raises for eval.mode=exact where it cannot apply)."""
    _, reason = reply_distribution(loaded.cfg, player)
    return resolve_mode(loaded.cfg, reason)


def run_eval(loaded: Loaded, player: Player) -> EvalOutcome:
    cfg = loaded.cfg
    mode, note = choose_mode(loaded, player)
    if note:
        LOG.info(note)
    t0 = time.perf_counter()
    run = _start_run(loaded, player, mode) if cfg.tracking.enabled else None
    tracking = time.perf_counter() - t0
    try:
        start = time.perf_counter()
        results = _play(loaded, player, mode)
        play = time.perf_counter() - start
        transcript = None
        if cfg.eval.transcript and mode == "sampled":
            folder = run.local_artifact_dir() if run is not None else None
            if folder is None:
                stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
                folder = Path(cfg.home) / "evals" / f"{stamp}-{loaded.config_hash}"
            transcript = tables.write_transcript(folder / "transcript.jsonl", results)
        if run is not None:
            t1 = time.perf_counter()
            _finish_run(run, loaded, results, transcript)
            tracking += time.perf_counter() - t1
    except BaseException as e:
        if run is not None:
            run.__exit__(type(e), e, None)
        raise
    return EvalOutcome(results, transcript, run.run_id if run else None, play, tracking, mode, note)
