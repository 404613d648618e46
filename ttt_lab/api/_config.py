"""Configs for the API: composed from overrides (the command line's), or passed in loaded."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ttt_lab.config.load import Loaded, using_config_dirs
from ttt_lab.errors import TttLabError

ConfigLike = Loaded | Sequence[str] | None
"""A loaded config, or the overrides to load one with (None: the defaults)."""


def load_config(overrides: Sequence[str] | None = None, *,
                config_dirs: Sequence[str | os.PathLike[str]] | None = None) -> Loaded:
    """The composed, validated configuration for these overrides (as on the command line:
    `["experiment=smoke", "batch_size=16"]`), with the user's config folders added to the shipped
    ones. `.cfg` is the typed config, `.tree` the plain resolved one, `.config_hash` its hash."""
    from ttt_lab.config.load import load

    with using_config_dirs(config_dirs):
        return load(list(overrides or []))


def loaded(cfg: ConfigLike) -> Loaded:
    """`cfg` itself when loaded, else the config its overrides compose."""
    if isinstance(cfg, Loaded):
        return cfg
    if isinstance(cfg, str):
        raise TttLabError(f"a config must be a list of overrides, not the string {cfg!r}: write [{cfg!r}], or pass "
                          "ttt_lab.api.load_config(...)'s result.")
    return load_config(cfg)


@dataclass(frozen=True)
class ConfigDiff:
    config_hash: str
    changes: dict[str, tuple[Any, Any]]
    """key -> (default, value) for every key whose value differs from the defaults."""


def config_diff(cfg: ConfigLike) -> ConfigDiff:
    """The keys whose value differs from the defaults; values read from the environment show as ***."""
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.config.load import defaults_tree

    config = loaded(cfg)
    base, now = flat_items(defaults_tree()), flat_items(config.logged_tree)
    missing = "<absent>"
    return ConfigDiff(config.config_hash, {k: (base.get(k, missing), now.get(k, missing))
                                           for k in sorted(set(base) | set(now))
                                           if base.get(k, missing) != now.get(k, missing)})


def add_config_dirs(dirs: Sequence[str | os.PathLike[str]]) -> None:
    """User config folders (as `--config-dir`) from now on, first on $TTT_LAB_CONFIG_DIR: this
    process and every sweep worker or job it starts see them."""
    from ttt_lab.config.load import add_config_dirs as add

    add([str(d) for d in dirs])


def config_keys() -> list[str]:
    """Every key an override can set: the full ones (`train.phases.0.batch_size`), the short names
    (`batch_size`) and the config groups (`experiment`)."""
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.config.load import aliases, defaults_tree, groups

    return [*flat_items(defaults_tree()), *aliases(), *groups()]


def config_groups() -> dict[str, list[str]]:
    """Each config group and its options, the user's config folders' included."""
    from ttt_lab.config.load import group_options, groups

    return {g: group_options(g) for g in groups()}
