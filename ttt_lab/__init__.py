"""ttt-lab: experiment management and config sweeps for RL on tic-tac-toe.

The Python API (see `ttt_lab.api`), the same work as the CLI's commands, returning data:

    import ttt_lab

    cfg = ttt_lab.load_config(["experiment=smoke"])
    result = ttt_lab.train(cfg)
    rates = ttt_lab.evaluate(["player=random"]).metrics
    trials = ttt_lab.export("quickstart").frame()

The names are imported on first use: `import ttt_lab` (which every `ttt-lab` command does) stays
as cheap as an empty package."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "AuditResult", "EvalResult", "Export", "Loaded", "ReportResult", "SweepResult", "TrainResult", "TrialRow",
    "TttLabError", "__version__", "audit", "config_diff", "evaluate", "export", "load_config", "report", "sweep",
    "train", "using_config_dirs",
]
_HOME = {"Loaded": "ttt_lab.config.load", "using_config_dirs": "ttt_lab.config.load", "TttLabError": "ttt_lab.errors"}
CALLABLE_PACKAGES = ("train", "audit", "report")
"""API functions named like a subpackage: `ttt_lab.train` is the package ttt_lab/train/ (the import
system sets it as this module's attribute whenever anything imports from it), made callable:
`ttt_lab.train(cfg)` calls `ttt_lab.api.train(cfg)`, and `ttt_lab.train.pipeline` stays the module."""


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module("ttt_lab.api"), self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in CALLABLE_PACKAGES and type(value) is types.ModuleType:
            value.__class__ = _CallablePackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """The API's names, from `ttt_lab.api` on first use (their types: `__init__.pyi`). Loaded by
    name, not by an import statement: every module's `from ttt_lab import atomic` reads this file,
    and the API sits above all of them (tests/test_layout.py)."""
    if name in CALLABLE_PACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # set here, callable, by _Package
    if name in __all__ and name != "__version__":
        return getattr(importlib.import_module(_HOME.get(name, "ttt_lab.api")), name)
    raise AttributeError(f"module 'ttt_lab' has no attribute {name!r}")
