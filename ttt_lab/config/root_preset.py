"""Where the root's experiment preset applies. conf/config.yaml chooses the tiny offline model's
preset (bare moves, six tokens a reply, its measured recipe); a command that names another model or
a served player and no experiment composes the schema's published settings instead."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

SERVED_PLAYERS = ("openai",)
"""Players whose replies come from a model served elsewhere, never the tiny offline one."""


def set_aside(overrides: list[str], root: Path) -> list[str]:
    """`["~experiment"]` where the preset of the root config at `root` does not apply to
    `overrides`, else nothing. An experiment named (or deleted) is Hydra's to compose as named."""
    if any(o.lstrip("+~").split("=", 1)[0] == "experiment" for o in overrides):
        return []
    choice: dict[str, str] = {}
    for o in overrides:
        key, _, value = o.lstrip("+").partition("=")
        if value and "." not in key:
            choice[key] = value
    model = root_choices(root).get("model")
    other_model = choice.get("model", model) != model
    return ["~experiment"] if other_model or choice.get("player") in SERVED_PLAYERS else []


@cache
def root_choices(root: Path) -> dict[str, Any]:
    """Group -> the option the root config at `root` chooses."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(OmegaConf.load(root))
    entries = tree.get("defaults", []) if isinstance(tree, dict) else []
    return {k: v for e in entries if isinstance(e, dict) for k, v in e.items()}
