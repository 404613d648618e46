"""Trainer callbacks: MLflow metrics in batches, game metrics, periodic evaluation, progress."""

from __future__ import annotations

from collections.abc import Callable

from transformers import TrainerCallback

from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import DRAW, WIN


def optimal_moves(games: list[GameRecord]) -> tuple[int, int]:
    """(model moves that keep the game's value, model moves): the solver's verdict on every move,
    free to compute, a measure of skill the reward against a weak opponent does not see."""
    from ttt_lab.game.solver import table

    t = table()
    kept = total = 0
    for g in games:
        state = 0
        for who, cell in g.moves:
            if who == "model":
                total += 1
                kept += cell in t.optimal[state]
            state = t.children[state][cell]
    return kept, total


def game_metrics(games: list[GameRecord]) -> dict[str, float]:
    n = len(games)
    if not n:
        return {}
    wins = sum(g.outcome == WIN for g in games)
    draws = sum(g.outcome == DRAW for g in games)
    turns = sum(g.model_turns for g in games)
    kept, moves = optimal_moves(games)
    return {
        "game/win_rate": wins / n, "game/draw_rate": draws / n, "game/loss_rate": (n - wins - draws) / n,
        "game/invalid_per_game": sum(g.invalid_moves for g in games) / n,
        "game/format_rate": sum(g.messages_in_format for g in games) / turns if turns else 0.0,
        "game/turns": turns / n,
        "game/optimal_move_rate": kept / moves if moves else 0.0,
    }


class MetricsCallback(TrainerCallback):
    """Sends TRL's logs and the games of the step to a tracked run, one `log_batch` per step."""

    def __init__(self, run, games: list, step_offset: int, phase_index: int,
                 on_step: Callable[[int, dict[str, float]], None] | None = None) -> None:
        self.run, self.games, self.offset, self.phase = run, games, step_offset, phase_index
        self.on_step = on_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = dict(logs or {})
        if "train_runtime" in logs:
            return
        metrics = {f"train/{k}": float(v) for k, v in logs.items()
                   if isinstance(v, int | float) and not k.startswith("train_")}
        metrics |= {f"train/{k}": v for k, v in game_metrics(self.games).items()}
        metrics["train/phase"] = float(self.phase)
        self.games.clear()
        step = self.offset + state.global_step
        if self.run is not None:
            self.run.log_metrics(metrics, step=step)
            self.run.flush()
        if self.on_step is not None:
            self.on_step(step, metrics)


class EvalCallback(TrainerCallback):
    """Every `every` steps, evaluates the current policy with `evaluate(model, tokenizer, step)`."""

    def __init__(self, every: int, evaluate: Callable, step_offset: int) -> None:
        self.every, self.evaluate, self.offset = every, evaluate, step_offset

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.every and state.global_step % self.every == 0:
            self.evaluate(model, processing_class, self.offset + state.global_step)
