"""The shared training config helper, where the training tests import it from."""

from tests.conftest import SMALL, cfg_for

__all__ = ["SMALL", "cfg_for"]
