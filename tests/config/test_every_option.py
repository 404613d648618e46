"""Every option of every config group (conf/<group>/<option>.yaml, nested groups included) composes
alone on top of the schema's defaults (`~experiment`: the root's preset aside, so that what an
option sets is measured against the schema) into a validated config, and shows in it: the composed
config is those defaults exactly, except at the keys the option's YAML sets (with its own defaults list: an
experiment built on another, an `override /opponent: ...`), and there it holds the YAML's values.
An option whose YAML sets nothing (the group's default choice, `ablation=none`) changes nothing.

An option that cannot load alone (it needs a user's checkpoint, a server, ...) is listed in
`CANNOT_LOAD_ALONE` with the words its error must say: it fails with that `TttLabError`, it is
not skipped. (tests/test_cli_fuzz.py feeds the same options to the CLI mixed with random input;
here each one is checked for what it sets.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from ttt_lab.config.flatten import flat_items
from ttt_lab.config.load import conf_dir, defaults_tree, groups, load
from ttt_lab.errors import TttLabError

CONF = conf_dir()
FILES = {f"{path.parent.relative_to(CONF).as_posix()}={path.stem}": path
         for path in sorted(CONF.glob("*/**/*.yaml")) if path.parent.relative_to(CONF).parts[0] in groups()}
"""`group=option` (`group/sub=option` for a nested group) -> its YAML file."""
OPTIONS = sorted(FILES)

CANNOT_LOAD_ALONE: dict[str, str] = {}
"""`group=option` -> words its one-paragraph error says when it is loaded alone on the defaults.
None today: `player=hf` falls back to the tiny model built offline, `player=openai` and
`tracking=server` only name an endpoint (nothing is contacted when a config composes)."""

ROOT_ORDER = [next(iter(e)) if isinstance(e, dict) else e
              for e in OmegaConf.to_container(OmegaConf.load(CONF / "config.yaml"))["defaults"]]  # type: ignore[index]
"""The root defaults list, in merge order (`base_config`, `env`, ..., `_self_`)."""
ROOT_CHOICE = {k: v for e in OmegaConf.to_container(OmegaConf.load(CONF / "config.yaml"))["defaults"]  # type: ignore[index]
               if isinstance(e, dict) for k, v in e.items()}
"""group -> the option the defaults choose (None: no option)."""


def _package(path: Path, group: str) -> str:
    """Where a group file's keys land: its `# @package` header, else the group's own key."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if m := re.match(r"#\s*@package\s+(\S+)", line):
            pkg = m.group(1)
            if pkg == "_group_":
                return group.replace("/", ".")
            return "" if pkg == "_global_" else pkg.removeprefix("_global_.")
    return group.replace("/", ".")


def _leaves(tree: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Dotted keys of a YAML body: mappings are walked, a list is one value (Hydra replaces lists)."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out.update(_leaves(v, key))
        else:
            out[key] = v
    return out


def _sets(group: str, option: str, claimed: set[str]) -> dict[str, Any]:
    """The leaves that loading `group=option` sets, in Hydra's merge order (a later entry wins):
    the groups its defaults lists override (the last override of a group wins, wherever it was
    written, and merges at the group's place in the root list: before this group or after it),
    then the presets it builds on and its own body where `_self_` says (last when absent).
    `claimed` collects every key touched, those of the default choices that an override replaces."""
    layered: dict[str, Any] = {}
    overrides: dict[str, str] = {}
    _compose(group, option, claimed, layered, overrides)
    here = ROOT_ORDER.index(group.split("/")[0]) if group.split("/")[0] in ROOT_ORDER else len(ROOT_ORDER)
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for other, choice in overrides.items():
        replaced = ROOT_CHOICE.get(other)
        if replaced is not None:  # whatever the root's choice set is dropped: its keys may change
            claimed.update(_sets(other, replaced, set()))
        pos = ROOT_ORDER.index(other) if other in ROOT_ORDER else len(ROOT_ORDER)
        (before if pos < here else after).update(_sets(other, choice, claimed))
    merged = {**before, **layered, **after}
    claimed.update(merged)
    return merged


def _compose(group: str, option: str, claimed: set[str], layered: dict[str, Any], overrides: dict[str, str]) -> None:
    """Walk `group=option`'s defaults list: bodies and added groups into `layered` in order,
    group overrides into `overrides` (a later one replaces an earlier one)."""
    path = CONF / group / f"{option}.yaml"
    body = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(body, dict), f"{path} is not a mapping"
    entries = body.pop("defaults", [])
    own = _leaves(body, _package(path, group))
    if "_self_" not in entries:
        entries = [*entries, "_self_"]
    for entry in entries:
        if entry == "_self_":
            layered.update(own)
            continue
        if isinstance(entry, str):
            _compose(group, entry, claimed, layered, overrides)
            continue
        ((key, choice),) = entry.items()
        override = key.startswith("override ")
        target = key.removeprefix("override ").removeprefix("optional ").strip()
        assert "@" not in target, f"{path}: package overrides in defaults lists are not modelled by this test"
        other = target.lstrip("/") if target.startswith("/") else f"{group}/{target}"
        if choice is None:
            continue
        if override:
            overrides.pop(other, None)
            overrides[other] = choice
        else:
            layered.update(_sets(other, choice, claimed))


def _at(tree: Any, key: str) -> Any:
    node = tree
    for part in key.split("."):
        assert isinstance(node, dict) and part in node, f"{key} is not in the composed config"
        node = node[part]
    return node


def _holds(value: Any, expected: Any) -> bool:
    """`value` (composed: the schema fills what a YAML leaves out) holds everything `expected` says."""
    if isinstance(expected, str) and "${" in expected:
        return True  # an interpolation: its value is the interpolated key's
    if isinstance(expected, dict):
        return isinstance(value, dict) and all(k in value and _holds(value[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(value, list) and len(value) == len(expected) and all(
            _holds(v, e) for v, e in zip(value, expected, strict=True))
    return value == expected and (isinstance(value, bool) == isinstance(expected, bool))


def _under(key: str, claimed: set[str]) -> bool:
    return any(key == c or key.startswith(c + ".") for c in claimed)


SCHEMA = ["~experiment"]
"""The root's experiment preset set aside; an experiment option replaces it anyway."""


@pytest.fixture(scope="module")
def defaults() -> dict[str, Any]:
    return load(SCHEMA).tree


def _alone(option: str) -> list[str]:
    return [option] if option.startswith("experiment=") else [*SCHEMA, option]


def test_options_are_found_in_every_group() -> None:
    assert {o.split("=")[0].split("/")[0] for o in OPTIONS} == set(groups())
    assert "experiment=smoke" in OPTIONS and "player=openai" in OPTIONS
    assert set(CANNOT_LOAD_ALONE) <= set(OPTIONS), "CANNOT_LOAD_ALONE names an option that no longer exists"
    for group, choice in ROOT_CHOICE.items():  # the root's choices are real options
        assert choice is None or f"{group}={choice}" in OPTIONS, (group, choice)


@pytest.mark.parametrize("option", OPTIONS)
def test_every_option_composes_alone_and_shows_in_the_config(option: str, defaults: dict[str, Any]) -> None:
    if option in CANNOT_LOAD_ALONE:
        with pytest.raises(TttLabError, match=CANNOT_LOAD_ALONE[option]):
            load(_alone(option))
        return
    loaded = load(_alone(option))
    assert loaded.overrides == _alone(option) and loaded.resolved_overrides == _alone(option)
    group, name = option.split("=")
    claimed: set[str] = set()
    sets = _sets(group, name, claimed)
    for key, expected in sets.items():
        assert _holds(_at(loaded.tree, key), expected), (
            f"{option} sets {key}={expected!r}, the composed config has {_at(loaded.tree, key)!r}")
    base, now = flat_items(defaults), flat_items(loaded.tree)
    changed = sorted(k for k in set(base) | set(now) if base.get(k, "<absent>") != now.get(k, "<absent>"))
    stray = [k for k in changed if not _under(k, claimed)]
    assert not stray, f"{option} changed keys its YAML does not set: {stray}"
    assert bool(changed) == bool(sets), f"{option} sets {sorted(sets)}, all to the defaults' values: it is invisible"
    if ROOT_CHOICE.get(group) == name:
        assert load([option]).tree == defaults_tree(), f"{option} is the default choice, so choosing it changes nothing"
