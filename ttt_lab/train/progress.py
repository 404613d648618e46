"""A rich progress bar over optimizer steps, with games/s and ETA, drawn where ttt-lab's lines go
(`ttt_lab.log`); where that is no terminal, one line per step instead."""

from __future__ import annotations

from ttt_lab import log
from ttt_lab.progress import games_progress

LOG = log.get("train")
SHOWN = (("train/reward", "reward"), ("train/game/win_rate", "win"), ("loss", "loss"))
"""The metrics a step's line shows where there is no terminal for the bar, when the step has them."""


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
            shown = [f"{name} {metrics[key]:.3f}" for key, name in SHOWN if key in metrics]
            LOG.info(f"{self.label} step {step}: {' '.join(shown)}".rstrip(": "))

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)


def sft_callback(progress: StepProgress):  # -> transformers.TrainerCallback
    """Advances `progress` by each optimizer step of the SFT warm-up, with its loss at the steps
    that log one (the trainer logs after a step ends)."""
    from transformers import TrainerCallback

    def logs_at(args, step: int) -> bool:
        return bool(args.logging_steps) and step % args.logging_steps == 0

    class Advance(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if not logs_at(args, state.global_step):
                progress.update(state.global_step, {})

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs and logs_at(args, state.global_step):
                progress.update(state.global_step, {"loss": logs["loss"]})

    return Advance()
