"""Opponents from settings: a user's class is checked for `reply` before it is instantiated."""

from __future__ import annotations

import pytest

from ttt_lab.config.build import build_opponent
from ttt_lab.config.schema import OpponentConfig
from ttt_lab.errors import InvalidSetting

BUILT = []


class Loud:
    """Records being built: a class without `reply` must never get this far."""

    def __init__(self) -> None:
        BUILT.append(self)


def test_a_class_without_reply_is_refused_before_it_is_built() -> None:
    with pytest.raises(InvalidSetting, match=r"reply\(board, seed\)"):
        build_opponent(OpponentConfig(_target_="tests.config.test_build.Loud"))
    assert BUILT == []


def test_a_function_or_a_missing_class_is_a_clear_error() -> None:
    with pytest.raises(InvalidSetting, match="a class"):
        build_opponent(OpponentConfig(_target_="os.getcwd"))
    with pytest.raises(InvalidSetting, match="importable class path"):
        build_opponent(OpponentConfig(_target_="no.such.Thing"))
