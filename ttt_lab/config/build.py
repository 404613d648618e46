"""Objects from settings: opponents (built-in or a user's class through `_target_`)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable

from ttt_lab.config.schema import OpponentConfig, SuiteEntry
from ttt_lab.errors import InvalidSetting
from ttt_lab.game.opponents import MinimaxOpponent, Opponent, RandomOpponent


def _import(path: str) -> type:
    module, _, name = path.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise InvalidSetting(
            "opponent._target_", path, f"an importable class path such as my_package.module.MyOpponent ({e})"
        ) from e
    if not inspect.isclass(obj):
        raise InvalidSetting("opponent._target_", path, "a class, not a function or module")
    if not callable(getattr(obj, "reply", None)):
        raise InvalidSetting("opponent._target_", path, "a class with a reply(board, seed) -> int method (checked "
                             "before the class is instantiated)")
    return obj


BUILT_IN = "ttt_lab.game.opponents."
BUILT_IN_EXPLOITER = "ttt_lab.game.exploiter.ExploiterOpponent"


def check_trusted(cfg: OpponentConfig, trust_code: bool, source: str) -> None:
    """Refuse to import a user's opponent class named by data someone else wrote (a shared
    tracking store) unless the user says they trust it: building it runs its code here."""
    if trust_code or cfg._target_.startswith(BUILT_IN) or cfg._target_ == BUILT_IN_EXPLOITER:
        return
    from ttt_lab.errors import TttLabError

    raise TttLabError(f"{source} names opponent._target_={cfg._target_}: building it would import and run that "
                      "code on this machine. Pass --trust-code if you trust whoever wrote the tracking store; "
                      "built-in opponents need no flag.")


def build_opponent(cfg: OpponentConfig) -> Opponent:
    """Instantiate `cfg._target_` with the fields its constructor accepts, plus `params`."""
    cls = _import(cfg._target_)
    accepted = inspect.signature(cls).parameters
    kwargs = {k: getattr(cfg, k) for k in ("tie_break", "scoring", "p_random", "exploit_share") if k in accepted}
    kwargs.update(cfg.params)
    try:
        opponent = cls(**kwargs)
    except TypeError as e:
        raise InvalidSetting("opponent.params", dict(cfg.params), f"arguments that {cls.__name__} accepts ({e})") from e
    return opponent  # its reply method was checked on the class (`_import`)


def opponent_factory(cfg: OpponentConfig) -> Callable[[float], Opponent | None]:
    """`make(p)`: the configured opponent with random-move probability p, or None when its
    class takes no `p_random`."""
    takes_p = "p_random" in inspect.signature(_import(cfg._target_)).parameters

    def make(p: float):
        if not takes_p and p != cfg.p_random:
            return None
        return build_opponent(dataclasses.replace(cfg, p_random=p))

    return make


def suite_opponent(entry: SuiteEntry) -> Opponent:
    if entry.opponent == "random":
        return RandomOpponent()
    return MinimaxOpponent(tie_break=entry.tie_break, scoring=entry.scoring, p_random=entry.p_random)
