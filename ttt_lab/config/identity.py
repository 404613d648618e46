"""A configuration's identity: the hash of everything that decides a training's results, with
settings added after runs were recorded left out at their neutral defaults (a finished trial stays
finished, a finding still resolves to the configs its trials ran)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from ttt_lab.config.sft_schema import DaggerUntil

HASH_EXCLUDED = ("tracking", "home", "audit", "report", "launcher", "study")
"""Where results go and how a sweep is laid out, not what a training computes."""


NEUTRAL_DEFAULTS: dict[tuple[str, ...], Any] = {
    ("opponent", "keep"): "best", ("model", "package"): "", ("model", "gguf_file"): "", ("player", "kv_cache"): True,
    ("opponent", "stop_at_wins"): None, **{("train", "sft", k): v for k, v in {
        "teacher_tie_break": "random", "teacher_strengths": [], "optimal_lines": 0, "first_weight": 1, "loop": "trl",
        "micro_batch_size": None, "head": "loss", "share_prefix": True, "dagger_rounds": 0, "dagger_games": 64,
        "dagger_epochs": 2, "dagger_tree": False, "dagger_all": False,
        "dagger_learning_rate": None, "dagger_lr_scheduler": None, "dagger_mistake_weight": 1,
        "dagger_reach_cap": 1, "pack_tokens": 0, "order": "random", "dagger_keep_best": False,
        "dagger_order": None, "dagger_mistakes": "teacher", "dagger_pool": "all",
        "dagger_replay_passes": None, "dagger_lines": True, "dagger_below_mistakes": True,
        "dagger_frozen_context": False, "dagger_frozen_prompt": False, "dagger_context_once": False,
        "attention": None}.items()},
    # each level, then the emptied section: a level added later leaves older trees' hashes alone
    **{("train", "sft", "dagger_until", k): None for k in dataclasses.asdict(DaggerUntil())},
    ("train", "sft", "dagger_until"): {}}
"""Settings added after runs were recorded, at the default that reproduces what those runs did:
left there, they do not change a config's identity (a finished trial stays finished, a finding
still resolves to the configs its trials ran). `player.kv_cache` changes only how a local model's
evaluation games are computed, never a training; `opponent.stop_at_wins` null runs every step, as
before it existed; the warm-up's teacher-data, lean-loop and DAgger settings at these values are
the TRL warm-up on the random tie-break teacher that ran before them."""


def _without_neutral(tree: dict[str, Any], path: tuple[str, ...], default: Any) -> dict[str, Any]:
    """`tree` without the setting at `path` where it holds its neutral default (copies, never edits)."""
    head, *rest = path
    sub = tree.get(head)
    if not isinstance(sub, dict):
        return tree
    if rest[1:]:
        return {**tree, head: _without_neutral(sub, tuple(rest), default)}
    if sub.get(rest[0], default) == default:
        return {**tree, head: {k: v for k, v in sub.items() if k != rest[0]}}
    return tree


def config_hash(tree: dict[str, Any]) -> str:
    """Hash of everything that decides results (tracking location and paths excluded)."""
    kept = {k: v for k, v in tree.items() if k not in HASH_EXCLUDED}
    for path, default in NEUTRAL_DEFAULTS.items():
        kept = _without_neutral(kept, path, default)
    blob = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
