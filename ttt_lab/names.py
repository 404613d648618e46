"""Names that become folders (studies, MLflow experiments) and the paths made from them: one
pattern for every name, and every derived path checked to lie under the home."""

from __future__ import annotations

import re
from pathlib import Path

from ttt_lab.errors import TttLabError

PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_name(name: object) -> bool:
    """Letters, digits and `._-` (starting with a letter or digit, no `..`): safe as a folder's name."""
    return isinstance(name, str) and PATTERN.fullmatch(name) is not None and ".." not in name


def check_name(what: str, name: str) -> str:
    """`name` when `is_name`, else a `TttLabError` saying what a name may hold."""
    if not is_name(name):
        raise TttLabError(f"the {what} {name!r} is not a valid name: use letters, digits and . _ - (up to 128, "
                          "starting with a letter or digit, no '..' and no '/'), e.g. batch-size-2026. Names "
                          "become folders under the home, so they may not point elsewhere.")
    return name


def under(home: str | Path, *parts: str) -> Path:
    """`home/parts...`, refused when it would resolve outside `home`."""
    root = Path(home).resolve()
    path = root.joinpath(*parts).resolve()
    if path != root and root not in path.parents:
        raise TttLabError(f"{Path(home).joinpath(*parts)} lies outside the home {root}; names may not point "
                          "elsewhere (no '..', no absolute paths).")
    return path
