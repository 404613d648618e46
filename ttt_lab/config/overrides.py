"""Short names on the command line: `batch_size=256` instead of `train.phases.0.batch_size=256`.

A short name is a key without dots that is neither a top-level key nor a config group.
It resolves through the alias table (`conf/aliases.yaml`) or, failing that, to the one
leaf of the config with that name. Ambiguous or unknown names fail with the candidates.
Keys with `*` stand for every element of a list and expand against the composed config.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ttt_lab.errors import TttLabError

_OVERRIDE = re.compile(r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w.\-]*)(?P<rest>=.*)?$", re.DOTALL)


class OverrideError(TttLabError):
    pass


def leaf_paths(node: Any, prefix: str = "") -> list[str]:
    """Every leaf key of a plain container; list elements become `*`."""
    if isinstance(node, Mapping):
        out = []
        for k, v in node.items():
            out += leaf_paths(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(node, list):
        out = []
        for v in node:
            out += leaf_paths(v, f"{prefix}.*")
        return sorted(set(out), key=out.index) if out else [f"{prefix}.*"]
    return [prefix]


NOT_SHORT = ("eval.suites.",)
"""Subtrees that are tables of definitions, not settings: their leaves get no short names."""


def leaf_index(paths: Iterable[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for p in paths:
        if p.startswith(NOT_SHORT):
            continue
        index.setdefault(p.rsplit(".", 1)[-1], []).append(p)
    return index


def expand_star(path: str, tree: Any) -> list[str]:
    """`train.phases.*.lr` -> one path per element of `train.phases` in `tree`."""
    head, _, tail = path.partition(".*")
    if not _:
        return [path]
    node = tree
    for part in head.split("."):
        node = node[part]
    out = []
    for i in range(len(node)):
        out += expand_star(f"{head}.{i}{tail}", tree)
    return out


def split(override: str) -> tuple[str, str, str] | None:
    """(prefix, key, '=value' or '') of an override, or None if it is not a plain key override."""
    m = _OVERRIDE.match(override)
    if not m:
        return None
    return m["prefix"] or "", m["key"], m["rest"] or ""


def resolve(
    overrides: list[str],
    aliases: Mapping[str, list[str]],
    tree: Mapping[str, Any],
    groups: Iterable[str],
) -> list[str]:
    """Rewrite short names in `overrides` to full keys, given the composed `tree`."""
    groups = set(groups)
    index = leaf_index(leaf_paths(tree))
    out = []
    for ov in overrides:
        parts = split(ov)
        if parts is None or "." in parts[1] or parts[1] in tree or parts[1] in groups:
            out.append(ov)
            continue
        prefix, key, rest = parts
        targets = aliases.get(key) or _unique_leaf(key, index, aliases)
        for target in targets:
            out += [f"{prefix}{p}{rest}" for p in expand_star(target, tree)]
    return out


def _unique_leaf(key: str, index: Mapping[str, list[str]], aliases: Mapping[str, list[str]]) -> list[str]:
    candidates = index.get(key, [])
    if len(candidates) == 1:
        return candidates
    if not candidates:
        near = difflib.get_close_matches(key, sorted({*index, *aliases}), n=4)
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        raise OverrideError(
            f"unknown config key '{key}'.{hint} Use a full dotted key (see `ttt-lab config show`), "
            f"or '+{key}=...' to add a new key."
        )
    raise OverrideError(
        f"the short name '{key}' is ambiguous: it could be {', '.join(candidates)}. "
        "Write the full dotted key instead."
    )
