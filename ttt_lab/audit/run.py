"""Running an audit: the subject rebuilt from the config (an opponent, each RL phase's
datasets exactly as training builds them, a player against the panel), and the MLflow job
that records it. `commands/audit.py` shows and writes what these return."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ttt_lab import log
from ttt_lab.audit.checks import Audit
from ttt_lab.config.build import build_opponent, opponent_factory
from ttt_lab.config.load import Loaded
from ttt_lab.tracking import keys

KINDS = ("opponent", "dataset", "policy")


def opponent_audit(loaded: Loaded) -> Audit:
    from ttt_lab.audit.opponent import audit_opponent

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


def policy_audit(loaded: Loaded) -> Audit:
    from ttt_lab.audit.policy import audit_policy, panel, walks_exactly
    from ttt_lab.players.factory import build_player
    from ttt_lab.progress import games_progress

    cfg = loaded.cfg
    player = build_player(cfg)
    make = opponent_factory(cfg.opponent)
    training = make(cfg.audit.policy.noise) or build_opponent(cfg.opponent)
    if walks_exactly(cfg, player, training):  # no games to count: the exact tree walk
        label, total = "policy audit (exact tree)", None
    else:
        label = "policy audit"
        total = cfg.audit.policy.games * len(panel(training, cfg.opponent.scoring, cfg.audit.policy.seed_sets))
    with games_progress(log.console()) as progress:
        task = progress.add_task(label, total=total)
        return audit_policy(cfg, player, training, lambda n: progress.advance(task, n))


def checkpoint_policy_audit(loaded: Loaded, checkpoint: str) -> Audit:
    """The policy audit of a trained checkpoint (greedy, through the `hf` player), as a study
    trial runs it at the end of training."""
    from ttt_lab.audit.policy import audit_policy
    from ttt_lab.players.hf import HFPlayer

    cfg = loaded.cfg
    model = dataclasses.replace(cfg.model, path=checkpoint)
    player = HFPlayer.from_config(dataclasses.replace(cfg, model=model,
                                                      player=dataclasses.replace(cfg.player, temperature=0.0)))
    make = opponent_factory(cfg.opponent)
    training = make(cfg.audit.policy.noise) or build_opponent(cfg.opponent)
    return audit_policy(cfg, player, training)


def tracking_job(loaded: Loaded, audit: Audit, paths: list[Path]):
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.tracking.background import Job
    from ttt_lab.tracking.runs import run_tags

    cfg = loaded.cfg
    tags = run_tags("audit", loaded.config_hash, cfg.seed, loaded.overrides,
                    extra={keys.AUDIT: audit.kind, keys.AUDIT_STATUS: audit.status})
    params = {k: str(v)[:6000] for k, v in flat_items(loaded.logged_tree).items()}
    return Job(cfg.tracking.experiment, f"audit-{audit.kind}-{loaded.config_hash[:6]}", tags, params,
               audit.metrics(), [str(p) for p in paths], "audit")


def run_kind(kind: str, loaded: Loaded, file: Path | None) -> Audit:
    if kind == "opponent":
        return opponent_audit(loaded)
    if kind == "dataset":
        return dataset_audit(loaded, file)
    return policy_audit(loaded)
