"""`ttt-lab audit opponent|dataset|policy`: run the checks, show them, write them, track them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from ttt_lab.audit import output
from ttt_lab.audit.checks import FAIL, Audit
from ttt_lab.config.load import Loaded, config_hash, load
from ttt_lab.errors import TttLabError

KINDS = ("opponent", "dataset", "policy")


def opponent_audit(loaded: Loaded) -> Audit:
    from ttt_lab.audit.opponent import audit_opponent
    from ttt_lab.audit.replay import opponent_factory

    cfg = loaded.cfg
    return audit_opponent(cfg.opponent, opponent_factory(cfg.opponent), cfg.audit.opponent, cfg.audit.seed)


def dataset_sources(loaded: Loaded, file: Path | None, trainer_order: bool = True) -> list:
    from ttt_lab.audit.dataset import DatasetSource, read_saved
    from ttt_lab.env.dataset import make_dataset
    from ttt_lab.game.seeding import derive_seed
    from ttt_lab.train.phase_data import PHASE_SALT, micro_batch, phase_dataset_config, phase_steps

    cfg = loaded.cfg
    if file is not None:
        src = read_saved(file, cfg.dataset)
        return [dataclasses.replace(src, seed=cfg.seed)]
    if not cfg.train.phases:
        return [DatasetSource("dataset", make_dataset(cfg.dataset, cfg.seed), cfg.dataset, None, cfg.seed)]
    out = []
    for i, phase in enumerate(cfg.train.phases):
        ds = phase_dataset_config(cfg, phase, phase_steps(cfg, phase))
        examples = make_dataset(ds, derive_seed(cfg.seed, PHASE_SALT + i))
        passes = phase.batch_size // micro_batch(phase.batch_size, cfg.train.micro_batch_size)
        out.append(DatasetSource(f"phase {i} ({phase.name})", examples, ds,
                                 phase.num_generations if trainer_order else None, cfg.seed, passes))
    return out


def dataset_audit(loaded: Loaded, file: Path | None, trainer_order: bool = True) -> Audit:
    """`trainer_order=False` skips replaying TRL's sampler (and importing TRL, seconds)."""
    from ttt_lab.audit.dataset import audit_dataset

    sources = dataset_sources(loaded, file, trainer_order)
    audits = [audit_dataset(src, loaded.cfg.audit.dataset) for src in sources]
    if len(audits) == 1:
        return audits[0]
    merged = Audit("dataset", "; ".join(a.subject for a in audits), seconds=sum(a.seconds for a in audits))
    for i, (a, phase) in enumerate(zip(audits, loaded.cfg.train.phases, strict=True)):
        prefix = f"{i}-{phase.name}"
        merged.checks += [dataclasses.replace(c, name=f"{prefix}/{c.name}") for c in a.checks]
        merged.data.setdefault("sources", {})[prefix] = a.data
    return merged


def policy_audit(loaded: Loaded, console: Console) -> Audit:
    from ttt_lab.audit.policy import audit_policy, panel
    from ttt_lab.audit.replay import opponent_factory
    from ttt_lab.players.factory import build_player
    from ttt_lab.progress import games_progress

    cfg = loaded.cfg
    player = build_player(cfg)
    make = opponent_factory(cfg.opponent)
    training = make(0.0) or make(cfg.opponent.p_random)
    total = cfg.audit.policy.games * len(panel(training, cfg.opponent.scoring, cfg.audit.policy.seed_sets))
    with games_progress(console) as progress:
        task = progress.add_task("policy audit", total=total)
        return audit_policy(cfg, player, training, lambda n: progress.advance(task, n))


def tracking_job(loaded: Loaded, audit: Audit, paths: list[Path]):
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.tracking import provenance
    from ttt_lab.tracking.background import Job

    cfg = loaded.cfg
    tags = provenance.tags(loaded.config_hash, cfg.seed) | {
        "ttt.kind": "audit", "ttt.audit": audit.kind, "ttt.audit.status": audit.status,
        "ttt.overrides": " ".join(loaded.overrides)}
    params = {k: str(v)[:6000] for k, v in flat_items(loaded.tree).items()}
    return Job(cfg.tracking.experiment, f"audit-{audit.kind}-{loaded.config_hash[:6]}", tags, params,
               audit.metrics(), [str(p) for p in paths], "audit")


def run_audit(kind: str, overrides: list[str], console: Console, file: Path | None = None,
              warn_only: bool = False) -> int:
    """The exit code: 1 when a check FAILs (0 with `warn_only`)."""
    if kind not in KINDS:
        raise TttLabError(f"Unknown audit '{kind}'. Choose one of: {', '.join(KINDS)} "
                          "(e.g. `ttt-lab audit opponent tie_break=first`).")
    if file is not None and kind != "dataset":
        raise TttLabError("--file only applies to `ttt-lab audit dataset` (a saved dataset.jsonl).")
    loaded = load(overrides)
    logger = None
    if loaded.cfg.tracking.enabled:
        from ttt_lab.tracking.background import BackgroundLogger

        logger = BackgroundLogger(loaded.cfg.tracking.uri, loaded.cfg.tracking.artifacts)
    try:
        audit = _audit(kind, loaded, console, file)
    except BaseException:
        if logger is not None:
            logger.cancel()
        raise
    console.print(output.rich_table(audit))
    folder = Path(loaded.cfg.audit.out) / f"{kind}-{config_hash({'all': loaded.tree})}"
    paths = output.write(audit, folder)
    console.print(f"{audit.kind} audit {audit.status} in {audit.seconds:.2f} s; wrote {paths[0]} "
                  f"(+ audit.md, audit.html)", highlight=False)
    if logger is not None:
        run_id = logger.log(tracking_job(loaded, audit, paths))
        console.print(f"MLflow run {run_id} in experiment '{loaded.cfg.tracking.experiment}'", highlight=False)
    if audit.status == FAIL:
        failed = ", ".join(c.name for c in audit.checks if c.status == FAIL)
        console.print(f"[bold red]FAIL:[/] {failed}" + (" (--warn-only: exit 0)" if warn_only else ""))
        return 0 if warn_only else 1
    return 0


def _audit(kind: str, loaded: Loaded, console: Console, file: Path | None) -> Audit:
    if kind == "opponent":
        return opponent_audit(loaded)
    if kind == "dataset":
        return dataset_audit(loaded, file)
    return policy_audit(loaded, console)
