"""Test players: deterministic repliers with full control over what the model says."""

from collections.abc import Callable, Sequence

from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Turn
from ttt_lab.game.solver import table


class FunctionPlayer:
    """Replies `fn(turn)` to every turn."""

    def __init__(self, fn: Callable[[Turn], str]) -> None:
        self.fn = fn
        self.calls = 0

    def respond(self, turns: Sequence[Turn]) -> list[str]:
        self.calls += 1
        return [self.fn(t) for t in turns]


def first_free(turn: Turn) -> str:
    return f"<move>{turn.board.index('.')}</move>"


def optimal_first(turn: Turn) -> str:
    t = table()
    return f"<think>ok</think><move>{t.optimal[t.index[turn.board]][0]}</move>"


def example(seed: int = 1, p: float = 0.0, model_first: bool = True, symbol: str = "X") -> Example:
    return Example(index=0, seed=seed, p_random=p, model_first=model_first, model_symbol=symbol, stratum=-1)
