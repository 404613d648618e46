"""Shell completion of what the commands take: config keys (`train.phases.0.batch_size=`), short
names (`batch_size=`), config groups and their options (`experiment=tiny_cpu`, the user's own from
`--config-dir` too) and, for `ttt-lab sweep`, named studies. The shell runs `ttt-lab` for each
completion, so this composes the default config once per press of Tab; a config that cannot be
composed completes nothing rather than printing an error into the command line."""

from __future__ import annotations

from typing import Any


def _with_config_dirs(ctx: Any) -> None:
    """`--config-dir` given before the command: the root callback does not run while completing."""
    from ttt_lab.config.load import add_config_dirs

    root = ctx.find_root() if ctx is not None else None
    given = (root.params.get("config_dir") if root is not None else None) or []
    if given:
        add_config_dirs(given)


def override_candidates(incomplete: str) -> list[str]:
    """Completions of one override being typed."""
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.config.load import aliases, defaults_tree, group_options, groups
    from ttt_lab.errors import TttLabError

    try:
        group_names = groups()
        if "=" in incomplete:
            key, _, value = incomplete.partition("=")
            bare = key.lstrip("+~")
            if bare in group_names:
                return [f"{key}={o}" for o in group_options(bare) if o.startswith(value)]
            return []
        keys = [*flat_items(defaults_tree()), *aliases(), *group_names]
    except TttLabError:
        return []
    return sorted({f"{k}=" for k in keys if k.startswith(incomplete)})


def complete_overrides(ctx: Any, incomplete: str) -> list[str]:
    _with_config_dirs(ctx)
    return override_candidates(incomplete)


def complete_sweep_args(ctx: Any, incomplete: str) -> list[str]:
    """A named study (first argument) or an override."""
    from ttt_lab.errors import TttLabError
    from ttt_lab.studies.named import all_studies

    _with_config_dirs(ctx)
    studies: list[str] = []
    if "=" not in incomplete:
        try:
            studies = [n for n in all_studies() if n.startswith(incomplete)]
        except TttLabError:
            studies = []
    return [*studies, *override_candidates(incomplete)]
