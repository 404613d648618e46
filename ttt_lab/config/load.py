"""Compose the configuration with Hydra and turn it into validated, typed settings."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from ttt_lab.config import overrides as ov
from ttt_lab.config.identity import HASH_EXCLUDED, NEUTRAL_DEFAULTS, config_hash  # noqa: F401
from ttt_lab.config.root_preset import set_aside
from ttt_lab.config.schema import Config, validate
from ttt_lab.errors import TttLabError


class ConfigError(TttLabError):
    pass


@dataclass(frozen=True)
class Loaded:
    cfg: Config
    """Typed, validated settings."""
    tree: dict[str, Any]
    """The resolved config as plain containers (what is logged and hashed)."""
    overrides: list[str]
    """The overrides as given."""
    resolved_overrides: list[str]
    """The overrides with short names rewritten to full keys."""
    from_env: frozenset[str] = frozenset()
    """Dotted keys whose value was read from the environment (`${oc.env:...}`): kept out of
    everything written (a token or password often arrives that way)."""

    @property
    def config_hash(self) -> str:
        return config_hash(self.tree)

    @property
    def logged_tree(self) -> dict[str, Any]:
        """`tree` as it may leave the process: values read from the environment are ***. (URL
        passwords are the writers' job: every MLflow call and console line goes through `redact`.)"""
        return _hide(self.tree, self.from_env)


CONF_ENV = "TTT_LAB_CONF"
"""A folder that replaces the shipped config tree (a full copy of conf/, with its config.yaml)."""
CONFIG_DIRS_ENV = "TTT_LAB_CONFIG_DIR"
"""Folders of the user's own config groups, added on top of the shipped ones (`--config-dir`);
several are separated by os.pathsep. Each may hold a sweeps/ folder of named studies."""
STUDIES = "sweeps"
"""The folder of named studies beside a config tree: not a config group."""


def package_root() -> Path:
    """Where the shipped config tree and studies live: the installed package (a wheel carries them
    as ttt_lab/conf and ttt_lab/sweeps, Hydra's pkg://ttt_lab.conf) or, from a checkout (an
    editable install), the repository's top level, where conf/ and sweeps/ are kept."""
    package = Path(__file__).resolve().parents[1]
    if (package / "conf" / "config.yaml").is_file():
        return package
    return package.parent


def conf_dir() -> Path:
    """The primary config tree: $TTT_LAB_CONF, else the shipped one (see `package_root`). pip
    installs a wheel unpacked, so both are plain folders, read by Hydra as `file://`."""
    env = os.environ.get(CONF_ENV)
    path = Path(env) if env else package_root() / "conf"
    if env and path.exists() and not path.is_dir():
        raise ConfigError(f"${CONF_ENV} {path} is a file, but it must be a folder: a complete copy of ttt-lab's "
                          f"conf/ folder (with its config.yaml). Point ${CONF_ENV} at that folder, or unset it to use "
                          "the shipped one.")
    if not (path / "config.yaml").is_file():
        if env:
            raise ConfigError(f"no config.yaml in {path} (${CONF_ENV}). Point ${CONF_ENV} at a complete copy of "
                              f"ttt-lab's conf/ folder, or unset it to use the shipped one.")
        raise ConfigError(f"no config.yaml in {path}: this ttt-lab installation lacks its config tree. Reinstall "
                          "the package (pip install --force-reinstall ttt-lab) or point $TTT_LAB_CONF at a copy of "
                          "its conf/ folder.")
    return path


def studies_dir() -> Path:
    """The shipped named studies (sweeps/*.yaml beside the shipped conf/)."""
    return package_root() / STUDIES


def user_config_dirs() -> list[Path]:
    """The user's config folders ($TTT_LAB_CONFIG_DIR, which `--config-dir` extends), checked: each
    exists and adds groups only (no config.yaml of its own, which Hydra would silently ignore)."""
    raw = os.environ.get(CONFIG_DIRS_ENV, "")
    dirs: list[Path] = []
    for part in raw.split(os.pathsep):
        if not part.strip():
            continue
        path = Path(part).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"the config folder {path} (--config-dir or ${CONFIG_DIRS_ENV}) does not exist or is "
                              "not a folder. Create it with group folders inside (e.g. experiment/my_recipe.yaml) "
                              "or fix the path.")
        if (path / "config.yaml").is_file():
            raise ConfigError(f"the config folder {path} holds a config.yaml: a --config-dir folder adds config "
                              "groups (experiment/NAME.yaml, opponent/NAME.yaml, …) beside the shipped ones, and its "
                              f"config.yaml would be ignored. Remove it, or point ${CONF_ENV} at the folder to "
                              "replace the whole config tree.")
        if path not in dirs:
            dirs.append(path)
    return dirs


def add_config_dirs(dirs: list[str] | list[Path]) -> str | None:
    """Put `dirs` first on $TTT_LAB_CONFIG_DIR (sweep workers and launched jobs inherit it); the
    variable's previous value."""
    before = os.environ.get(CONFIG_DIRS_ENV)
    os.environ[CONFIG_DIRS_ENV] = os.pathsep.join([*(str(Path(d).expanduser().absolute()) for d in dirs),
                                                   *([before] if before else [])])
    return before


@contextlib.contextmanager
def using_config_dirs(dirs: Sequence[str | os.PathLike[str]] | None) -> Iterator[None]:
    """User config folders (as `--config-dir`) for the duration of the block; through the
    environment, so that sweep workers started inside it see them too."""
    if not dirs:
        yield
        return
    before = add_config_dirs([str(d) for d in dirs])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONFIG_DIRS_ENV, None)
        else:
            os.environ[CONFIG_DIRS_ENV] = before


def search_path() -> list[Path]:
    """Every config folder Hydra reads, the primary first."""
    primary = conf_dir()
    return [primary, *(d for d in user_config_dirs() if d != primary.resolve())]


def _option_files(folders: list[Path]) -> dict[tuple[str, str], list[Path]]:
    found: dict[tuple[str, str], list[Path]] = {}
    for folder in folders:
        for group in sorted(p for p in folder.iterdir() if p.is_dir() and p.name != STUDIES):
            for f in sorted(group.glob("*.yaml")):
                found.setdefault((group.name, f.stem), []).append(f)
    return found


def check_clashes(folders: list[Path] | None = None) -> None:
    """A group option defined in two config folders is refused: which one Hydra takes would depend
    on the order of the folders, so a run's config would not be what its overrides say."""
    files = _option_files(folders if folders is not None else search_path())
    clashes = {k: v for k, v in files.items() if len(v) > 1}
    if clashes:
        (group, name), paths = sorted(clashes.items())[0]
        more = f" (and {len(clashes) - 1} more clash(es))" if len(clashes) > 1 else ""
        raise ConfigError(f"{group}={name} is defined in more than one config folder: {', '.join(map(str, paths))}"
                          f"{more}. Rename your file (e.g. {group}/my_{name}.yaml) so that each name means one "
                          "config.")


def groups() -> list[str]:
    return sorted({p.name for folder in search_path() for p in folder.iterdir() if p.is_dir()
                   and p.name != STUDIES})


def group_options(group: str) -> list[str]:
    """The options of a config group across every config folder."""
    return sorted({f.stem for folder in search_path() for f in (folder / group).glob("*.yaml")})


@cache
def _register() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="base_config", node=Config)


def aliases() -> dict[str, list[str]]:
    from omegaconf import OmegaConf

    path = conf_dir() / "aliases.yaml"
    return OmegaConf.to_container(OmegaConf.load(path)) if path.is_file() else {}  # type: ignore[return-value]


def compose_tree(overrides: list[str]) -> Any:
    """Hydra composition; Hydra's errors become one-paragraph `ConfigError`s. The root's preset is
    set aside where it does not apply (`root_preset.set_aside`)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    _register()
    folders = search_path()
    check_clashes(folders)
    extra = [_hydra_searchpath(folders[1:])] if len(folders) > 1 else []
    try:
        with initialize_config_dir(config_dir=str(folders[0]), version_base="1.3", job_name="ttt-lab"):
            aside = set_aside(overrides, folders[0] / "config.yaml")
            return compose(config_name="config", overrides=[*aside, *overrides, *extra])
    except MissingConfigException as e:
        options = ", ".join(e.options or [])
        raise ConfigError(
            f"{_first_line(e)}. Choose one of: {options}." if options else f"{_first_line(e)}."
        ) from e
    except (HydraException, OmegaConfBaseException, ValueError) as e:
        raise ConfigError(_past_the_end(e, overrides) or _explain(e)) from e
    except YAMLError as e:  # a user's preset that is not valid YAML
        detail = " ".join(str(e).split())
        raise ConfigError(f"a config file is not valid YAML: {detail}. Fix that file (e.g. a key given twice).") from e


def _hydra_searchpath(folders: list[Path]) -> str:
    """The user's folders as Hydra's search path override, each a quoted file:// entry (a path may
    hold a comma or a space)."""
    quoted = ", ".join("'file://" + str(f).replace("\\", "\\\\").replace("'", "\\'") + "'" for f in folders)
    return f"hydra.searchpath=[{quoted}]"


_LIST_ENTRY = re.compile(r"Error merging override (\S+?)=.*full_key: ([\w.]+)\[(\d+)\]")


def _past_the_end(e: BaseException, overrides: list[str]) -> str | None:
    """For an override that names a list entry the list does not have (`train.phases.5.steps=3`
    with two phases), the paragraph that says so; None for any other error. An override may
    change an entry but not add one, so the fix is the whole list or a preset with more."""
    from omegaconf import OmegaConf

    found = _LIST_ENTRY.search(" ".join(f"{e} {e.__cause__ or ''}".split()))
    if found is None:
        return None
    override, key, index = found.group(1), found.group(2), int(found.group(3))
    # the list's length from the presets: without every override that names a list entry
    others = [o for o in overrides if not any(part.isdigit() for part in o.split("=", 1)[0].split("."))]
    try:
        entries = OmegaConf.select(compose_tree(others), key)
    except ConfigError:
        return None
    if entries is None or not OmegaConf.is_list(entries) or index < len(entries):
        return None
    n = len(entries)
    have = {0: "no entries", 1: "1 entry (index 0)"}.get(n, f"{n} entries (indices 0 to {n - 1})")
    return (f"`{override}` names entry {index} of `{key}`, which has {have} in this configuration. An "
            f"override changes an entry but cannot add one: give the whole list ({key}=[...]), or choose "
            "a preset that has more entries (see `ttt-lab config show`).")


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0].rstrip(".")


def _explain(e: BaseException) -> str:
    text = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
    cause = e.__cause__
    if cause is not None and str(cause).strip():
        detail = " ".join(line.strip() for line in str(cause).splitlines() if line.strip())
        if detail not in text:
            text = f"{text}: {detail}"
    return (
        f"the configuration could not be composed: {text}. Check the key and value against "
        "`ttt-lab config show`; override syntax is key=value, +key=value to add, ~key to delete."
    )


def load(overrides: list[str] | None = None, *,
         plain_trees: dict[tuple[str, ...], dict[str, Any]] | None = None) -> Loaded:
    """Compose, resolve short names, type-check and validate the configuration. Short names are
    resolved on the tree composed without them; `plain_trees` keeps those trees by their
    overrides, for a caller that loads many configs sharing them (a study's trials)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    overrides = list(overrides or [])
    plain = [o for o in overrides if not _is_short(o)]
    resolved = overrides
    if len(plain) == len(overrides):
        base = compose_tree(plain)
    else:
        unshort = None if plain_trees is None else plain_trees.get(tuple(plain))
        if unshort is None:
            unshort = cast(dict[str, Any], OmegaConf.to_container(compose_tree(plain), resolve=False))
            if plain_trees is not None:
                plain_trees[tuple(plain)] = unshort
        resolved = ov.resolve(overrides, aliases(), unshort, groups())
        base = compose_tree(resolved)
    try:
        tree = OmegaConf.to_container(base, resolve=True)
        cfg = OmegaConf.to_object(base)
    except OmegaConfBaseException as e:
        raise ConfigError(_explain(e)) from e
    assert isinstance(cfg, Config) and isinstance(tree, dict)
    validate(cfg)
    from_env = env_keys(OmegaConf.to_container(base, resolve=False))  # type: ignore[arg-type]
    resolved_tree = cast(dict[str, Any], tree)  # a config's keys are strings
    _hide_values(resolved_tree, from_env)
    return Loaded(cfg, resolved_tree, overrides, resolved, from_env)


OWN_ENV = re.compile(r"oc\.env:\s*TTT_LAB_")
"""ttt-lab's own variables (TTT_LAB_HOME: a folder) are settings, not secrets."""


def env_keys(unresolved: dict[str, Any]) -> frozenset[str]:
    """Keys whose value comes from `${oc.env:...}`, directly or through an interpolation of such
    a key (ttt-lab's own TTT_LAB_* variables excepted)."""
    from ttt_lab.config.flatten import flat_items

    raw = {k: v for k, v in flat_items(unresolved).items() if isinstance(v, str) and "${" in v}
    found = {k for k, v in raw.items() if "oc.env:" in OWN_ENV.sub("", v)}
    while True:
        more = {k for k, v in raw.items() if k not in found and any("${" + f + "}" in v for f in found)}
        if not more:
            return frozenset(found)
        found |= more


def _hide_values(tree: dict[str, Any], from_env: frozenset[str]) -> None:
    from ttt_lab.config.flatten import flat_items
    from ttt_lab.redact import hide_value

    for key, value in flat_items(tree).items():
        if key in from_env and value not in (None, ""):
            hide_value(str(value))


def _hide(tree: Any, from_env: frozenset[str], prefix: str = "") -> Any:
    from ttt_lab.redact import HIDDEN

    if not from_env:
        return tree
    if isinstance(tree, dict):
        return {k: _hide(v, from_env, f"{prefix}.{k}" if prefix else str(k)) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_hide(v, from_env, f"{prefix}.{i}") for i, v in enumerate(tree)]
    return HIDDEN if prefix in from_env and tree not in (None, "") else tree


def _is_short(override: str) -> bool:
    parts = ov.split(override)
    if parts is None or "." in parts[1]:
        return False
    return parts[1] not in Config.__dataclass_fields__ and parts[1] not in groups()


def defaults_tree() -> dict[str, Any]:
    return load([]).tree


def from_tree(tree: dict[str, Any], overrides: list[str] | None = None) -> Loaded:
    """A config exactly as logged (the resolved tree of an earlier run), typed and validated
    against today's schema, but with none of today's defaults filled in over it."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    _register()
    try:
        merged = OmegaConf.merge(OmegaConf.structured(Config), OmegaConf.create(tree))
        cfg = OmegaConf.to_object(merged)
        full = OmegaConf.to_container(merged, resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"the logged configuration does not fit this version's schema: {_explain(e)}") from e
    assert isinstance(cfg, Config)
    validate(cfg)
    return Loaded(cfg, full, list(overrides or []), list(overrides or []))  # type: ignore[arg-type]
