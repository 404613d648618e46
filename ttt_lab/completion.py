"""Shell completion of what the commands take: config keys (`train.phases.0.batch_size=`), short
names (`batch_size=`), config groups and their options (`experiment=tiny_cpu`, the user's own from
`--config-dir` too) and, for `ttt-lab sweep`, named studies. The shell runs `ttt-lab` for each
completion, so this composes the default config once per press of Tab; a config that cannot be
composed completes nothing rather than printing an error into the command line."""

from __future__ import annotations

from typing import Any


def _with_config_dirs(ctx: Any) -> None:
    """`--config-dir` given before the command: the root callback does not run while completing."""
    from ttt_lab import api

    root = ctx.find_root() if ctx is not None else None
    given = (root.params.get("config_dir") if root is not None else None) or []
    if given:
        api.add_config_dirs(given)


def override_candidates(incomplete: str) -> list[str]:
    """Completions of one override being typed."""
    from ttt_lab import api

    try:
        groups = api.config_groups()
        if "=" in incomplete:
            key, _, value = incomplete.partition("=")
            bare = key.lstrip("+~")
            if bare in groups:
                return [f"{key}={o}" for o in groups[bare] if o.startswith(value)]
            return []
        keys = api.config_keys()
    except api.TttLabError:
        return []
    return sorted({f"{k}=" for k in keys if k.startswith(incomplete)})


def complete_overrides(ctx: Any, incomplete: str) -> list[str]:
    _with_config_dirs(ctx)
    return override_candidates(incomplete)


def complete_sweep_args(ctx: Any, incomplete: str) -> list[str]:
    """A named study (first argument) or an override."""
    from ttt_lab import api

    _with_config_dirs(ctx)
    studies: list[str] = []
    if "=" not in incomplete:
        try:
            studies = sorted({p.name for p in api.named_studies() if p.name.startswith(incomplete)})
        except api.TttLabError:
            studies = []
    return [*studies, *override_candidates(incomplete)]
