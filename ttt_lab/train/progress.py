"""A rich progress bar over optimizer steps, with games/s and ETA, drawn where ttt-lab's lines go
(`ttt_lab.log`); where that is no terminal, one line per step instead."""

from __future__ import annotations

from ttt_lab import log
from ttt_lab.progress import games_progress

LOG = log.get("train")


class StepProgress:
    def __init__(self, label: str, steps: int, games_per_step: int) -> None:
        self.console = log.console()
        self.progress = games_progress(self.console, unit="games")
        self.label, self.total, self.per_step = label, steps * games_per_step, games_per_step

    def __enter__(self) -> StepProgress:
        self.progress.__enter__()
        self.task = self.progress.add_task(self.label, total=self.total)
        return self

    def update(self, step: int, metrics: dict[str, float]) -> None:
        self.progress.advance(self.task, self.per_step)
        if not self.console.is_terminal:
            reward = metrics.get("train/reward", float("nan"))
            win = metrics.get("train/game/win_rate", float("nan"))
            LOG.info(f"{self.label} step {step}: reward {reward:.3f} win {win:.2f}")

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)
