"""ttt-lab: experiment management and config sweeps for RL on tic-tac-toe.

The Python API is `ttt_lab.api`, the same work as the CLI's commands, returning data:

    from ttt_lab import api

    cfg = api.load_config(["experiment=smoke"])
    result = api.train(cfg)
    rates = api.evaluate(["player=random"]).metrics
    trials = api.export("quickstart").frame()

This file is the bottom layer (every module reads it), so it names nothing above it: `ttt_lab.train`
is the training package, and `import ttt_lab` stays as cheap as an empty package."""

from __future__ import annotations

__version__ = "0.1.0"
