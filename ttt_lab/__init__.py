"""ttt-lab: experiment management and config sweeps for RL on tic-tac-toe."""

__version__ = "0.1.0"
