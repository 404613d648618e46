"""ttt-lab's environment for verifiers: `vf-eval ttt-lab-verifiers` (`pip install 'ttt-lab[verifiers]'`).

verifiers finds the environment's classes through `__all__`; they are imported on first use, so
`ttt_lab_verifiers.games` (the verifiers-free half) imports without verifiers installed.
"""

from typing import Any

__all__ = ["TttLabData", "TttLabEnv", "TttLabEnvConfig", "TttLabTask", "TttLabTaskset", "TttLabTasksetConfig",
           "load_environment"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ttt_lab_verifiers import environment

        return getattr(environment, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
