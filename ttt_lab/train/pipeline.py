"""`ttt-lab train`: SFT warm-up, then the RL phases in order, each from the previous checkpoint.

Layout under `runs/`: `cache/sft-<hash>/` (shared by every run whose warm-up settings
match), `train/<config hash>/<i>-<phase>/` (one finished checkpoint per phase, marked by
`done.json`; `.work` folders hold an unfinished phase and its trainer checkpoints). Running
the same config again skips finished phases and resumes an unfinished one.

Tracking: one MLflow run per config hash (a resumed run continues it). Phases share one
step axis: phase i's steps are offset by the steps of the phases before it, and
`train/phase` records which phase a step belongs to.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ttt_lab import log, timing
from ttt_lab.config.load import Loaded
from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.evaluation.summary import Paired, Summary, paired
from ttt_lab.locks import file_lock
from ttt_lab.tracking import keys
from ttt_lab.train import distributed
from ttt_lab.train.checkpoints import checkpoint_digest, done_info, is_done
from ttt_lab.train.runtime import Runtime, check_device, check_vllm, quiet, resolve

LOG = log.get("train")


@dataclass
class TrainOutcome:
    checkpoint: Path
    run_id: str | None
    final: list[Summary]
    seconds: float
    sft: list[Summary] | None = None
    """The warm-up checkpoint on the same games as `final` (None without SFT)."""
    gains: list[Paired] = field(default_factory=list)
    """`final` against `sft` game by game, per opponent (empty without SFT)."""


def warm_up_settings(cfg: Config) -> dict:
    """What a warm-up reads of the config: trials alike here share one warm-up (the base model's
    content and the arithmetic aside, `sft_key`)."""
    from ttt_lab.train.sft import teacher_dataset

    sft = dataclasses.asdict(cfg.train.sft)
    del sft["seed"]  # the warm-up's seed is the key's "seed"
    spec = {"sft": sft, "env": dataclasses.asdict(cfg.env), "dataset": dataclasses.asdict(teacher_dataset(cfg)),
            "seed": warm_up_seed(cfg), "model": dataclasses.asdict(cfg.model) | {"path": ""}}
    if cfg.train.sft.dagger_rounds:  # its walks read the reply budget, the goal ending the rounds, a reach cap's suite
        from ttt_lab.evaluation.suite import entries

        spec["walk"] = {"max_new_tokens": cfg.player.max_new_tokens, "stop_at_wins": cfg.opponent.stop_at_wins,
                        "suite": [dataclasses.asdict(e) for e in entries(cfg)] if cfg.train.sft.dagger_reach_cap > 1
                        else None}
    return spec


def sft_key(cfg: Config, base: str, runtime: Runtime | None = None) -> str:
    """The warm-up cache's key: its settings and the base model's *content* (how the home
    path is spelled must not matter: a sweep worker's absolute home and the CLI's `runs`
    share one warm-up), nor do settings the warm-up never reads (the RL phases' dataset sampling:
    a curriculum study's arms share one); a bf16 or compiled warm-up is not an fp32 one (the lean
    loop never compiles)."""
    spec = {"base": checkpoint_digest(base), **warm_up_settings(cfg)}
    runtime = runtime or resolve(cfg)  # how the warm-up's arithmetic ran: a bf16 or compiled one differs
    spec |= {"bf16": runtime.bf16, "compiled": runtime.compile and cfg.train.sft.loop == "trl"}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _open_run(loaded: Loaded, folder: Path):
    cfg = loaded.cfg
    if not cfg.tracking.enabled:
        return None
    from ttt_lab.tracking.runs import open_run
    from ttt_lab.tracking.store import TrackedRun, open_store

    store = open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
    marker = folder / "mlflow_run_id"
    if marker.is_file():
        run = TrackedRun.reopen(store, marker.read_text().strip())
        if run is not None:
            run.set_tags({keys.RESUMED: "true"})
            return run
    run = open_run(store, cfg.tracking.experiment, "train", f"train-{loaded.config_hash[:6]}",
                   config_hash=loaded.config_hash, seed=cfg.seed, overrides=loaded.overrides, tree=loaded.logged_tree)
    log_config(run, loaded)
    marker.write_text(run.run_id)
    return run


def log_config(run, loaded: Loaded) -> None:
    """The resolved config (what `ttt-lab reproduce` re-runs) and the torch threads used."""
    import torch
    from omegaconf import OmegaConf

    run.log_text(OmegaConf.to_yaml(OmegaConf.create(loaded.logged_tree)), "config.yaml")
    from ttt_lab.train.runtime import kernel_path

    run.set_tags({keys.TORCH_THREADS: str(torch.get_num_threads()),
                  keys.KERNEL_PATH: json.dumps(kernel_path(loaded.cfg.model.device), sort_keys=True)})


def _log_summaries(run, summaries: list[Summary], step: int, prefix: str = "eval") -> None:
    if run is None:
        return
    for s in summaries:
        run.log_metrics(s.metrics(prefix), step=step)
    run.flush()


def train(loaded: Loaded, *, fresh: bool = False, run=None,
          on_eval: Callable[[int, list[Summary]], None] | None = None) -> TrainOutcome:
    """SFT warm-up (cached), the RL phases (resumable), the final evaluation.

    `run`: an MLflow run owned by the caller (a sweep's child run) to log into; it is left
    open. Otherwise one run per config hash, reopened on resume, ended here. `on_eval` sees
    every periodic evaluation (a sweep reports it to Optuna, and may raise to prune).

    One process at a time trains a config (a lock beside its folder): two sweep trials or
    two machines sharing `runs/` that land on the same config wait, then reuse its phases."""
    cfg = loaded.cfg
    quiet()
    check_device(cfg)
    check_vllm(cfg)
    distributed.check_processes(cfg.train.processes)
    runtime = resolve(cfg, say=LOG.info)  # once: every step below loads, trains and plays under it
    runtime.apply()
    start = time.perf_counter()
    folder = Path(cfg.home) / "train" / loaded.config_hash

    def waiting() -> None:
        LOG.info(f"another process is training this config ({folder}); waiting for it, then reusing its "
                 "finished phases")

    # A caller's clock (a sweep trial's) keeps running; otherwise this training has its own.
    clock = timing.current() or timing.Clock(already=timing.claim_start())
    with timing.running(clock):
        if not distributed.is_main():  # rank 0 holds the lock and decides; the others follow it
            return _train(loaded, runtime, folder, start, False, None, None)
        with file_lock(folder.with_name(folder.name + ".lock"), on_wait=waiting):
            return _train(loaded, runtime, folder, start, fresh, run, on_eval)


def _train(loaded: Loaded, runtime: Runtime, folder: Path, start: float, fresh: bool, run,
           on_eval: Callable[[int, list[Summary]], None] | None) -> TrainOutcome:
    from ttt_lab.players.hf import resolve_model_path
    from ttt_lab.train.checkpoints import load_model

    cfg = loaded.cfg
    main = distributed.is_main()
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        owned = run is None
        if owned and main:
            run = _open_run(loaded, folder)
            if run is not None:
                stack.enter_context(run)  # ends FINISHED, or FAILED / KILLED on an exception
        base = resolve_model_path(cfg)
        load_model(base, cfg, runtime=runtime)  # fail on a bad checkpoint before any work
        current, sft_eval = base, None
        if cfg.train.sft.enabled:
            with timing.phase("warm_up"):
                current = _warm_up(cfg, runtime, base, run)
            if main:
                with timing.phase("eval"):
                    sft_eval = _evaluate_path(current, cfg, runtime)
                _log_summaries(run, sft_eval, 0, "eval_sft")
        with timing.phase("rl"):
            current, step = _phases(cfg, runtime, folder, current, run, on_eval)
        if not main:
            return TrainOutcome(Path(current), None, [], time.perf_counter() - start, None)
        with timing.phase("eval"):
            final = _evaluate_path(current, cfg, runtime)
        _log_summaries(run, final, step)
        gains = [paired(a, b) for a, b in zip(sft_eval, final, strict=True)] if sft_eval else []
        if run is not None and gains:
            run.log_metrics({k: v for g in gains for k, v in g.metrics().items()}, step=step)
            run.flush()
        if run is not None:
            run.set_tags({keys.CHECKPOINT: str(Path(current).resolve())})
            clock = timing.current()
            if owned and clock is not None:  # a sweep trial logs its own, its audit included
                run.log_metrics(clock.metrics(), step=step)
    return TrainOutcome(Path(current), run.run_id if run else None, final, time.perf_counter() - start, sft_eval,
                        gains)


def _warm_up(cfg: Config, runtime: Runtime, base: str, run) -> str:
    """The SFT checkpoint for `base`: built once per warm-up key under a lock, then shared."""
    from ttt_lab.train import sft

    cache = Path(cfg.home) / "cache" / f"sft-{sft_key(cfg, base, runtime)}"
    lock = file_lock(cache.with_name(cache.name + ".lock")) if distributed.is_main() else contextlib.nullcontext()
    with lock:
        if not distributed.decide(is_done(cache)):
            trees = cfg.train.sft.teacher_trees
            more = f" + {trees} teacher tree{'s' * (trees != 1)}" if trees else ""
            lines = cfg.train.sft.optimal_lines
            more += f" + {lines}x its lines against the optimal opponent" if lines else ""
            LOG.info(f"SFT warm-up: {cfg.train.sft.num_games} teacher games{more} -> {cache}")
            info = sft.run_sft(cfg, base, cache, runtime=runtime)
        else:
            info = done_info(cache)
            LOG.info(f"SFT warm-up: reusing {cache}")
    if run is not None:
        for i, loss in enumerate(info.get("losses", [])):
            run.log_metrics({"sft/loss": loss}, step=i)
        run.log_metrics({"sft/kept_games": info["kept"], "sft/teacher_games": info["games"]})
        run.log_metrics({f"sft/data/{k}": v for k, v in info.get("coverage", {}).items()})
        for i, point in enumerate(info.get("accuracy", [])):  # train.sft.loop=lean: after each epoch
            run.log_metrics({f"sft/teacher_forced/{k}": point[k] for k in ("move", "optimal", "reply", "seconds")},
                            step=i)
        for i, row in enumerate(info.get("dagger", [])):  # each DAgger walk's exact rates, in the UI
            run.log_metrics({f"sft/dagger/{k}": v for k, v in row.items()
                             if isinstance(v, int | float) and not isinstance(v, bool)}, step=i)
        run.flush()
    return str(cache)


def _phases(cfg: Config, runtime: Runtime, folder: Path, current: str, run,
            on_eval: Callable[[int, list[Summary]], None] | None) -> tuple[str, int]:
    """Each RL phase from the previous one's checkpoint (finished phases skipped); the last
    checkpoint and the steps taken over all phases."""
    from ttt_lab.train import grpo
    from ttt_lab.train.callbacks import EvalCallback, MetricsCallback
    from ttt_lab.train.evaluate import evaluate_model
    from ttt_lab.train.phase_data import phase_steps
    from ttt_lab.train.progress import StepProgress

    def periodic(model, tokenizer, at: int) -> None:
        if not distributed.is_main():
            return
        with timing.phase("eval"):
            summaries = evaluate_model(model, tokenizer, cfg, cfg.train.eval_games, runtime=runtime)
        _log_summaries(run, summaries, at)
        if on_eval is not None:
            on_eval(at, summaries)

    step = 0
    for i, phase in enumerate(cfg.train.phases):
        out = folder / f"{i}-{phase.name}"
        steps = phase_steps(cfg, phase)
        if distributed.decide(is_done(out)):
            LOG.info(f"phase {phase.name}: done, skipping ({out})")
        else:
            with StepProgress(f"phase {phase.name}", steps, phase.batch_size) as bar:
                games: list = []
                cbs = [MetricsCallback(run, games, step, i, bar.update),
                       EvalCallback(cfg.train.eval_every, periodic, step)]
                grpo.run_rl_phase(cfg, phase, i, current, out, callbacks=cbs, games=games,
                                  say=LOG.info, runtime=runtime)
        current, step = str(out), step + steps
    return current, step


def _evaluate_path(path: str, cfg: Config, runtime: Runtime) -> list[Summary]:
    from ttt_lab.train.checkpoints import load_model
    from ttt_lab.train.evaluate import evaluate_model

    model, tokenizer = load_model(path, cfg, runtime=runtime)
    return evaluate_model(model, tokenizer, cfg, cfg.eval.games, runtime=runtime)
