"""A greedy policy against every tie-break branch of the optimal opponent, through the batched
engine: the exact W/D/L against the evaluation's optimal opponent (minimax, `value` scoring,
ties at random), and every position that opponent can lead the policy to.

The optimal opponent picks uniformly among its value-keeping moves, so a line's probability is
the product of 1/k over its choices. The walk plays the games in rounds: each game follows a
script (which candidate to take at the opponent's n-th move, the first past its end); a game
that met a choice of k candidates beyond its script spawns k-1 new scripts for the next round.
A greedy policy plays the same prefix again, so the rounds enumerate the tree; the lines' count
is the tree's leaves (at most a few hundred).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ttt_lab.env.dataset import Example
from ttt_lab.env.record import GameRecord
from ttt_lab.game.solver import candidates, table

WALK_SEED = 0x0B7A1


class BranchOpponent:
    """The optimal opponent told, per game seed, which of its candidates to play at each move."""

    def __init__(self, scripts: dict[int, tuple[int, ...]]) -> None:
        self.scripts = scripts
        self.met: dict[int, list[int]] = {s: [] for s in scripts}
        self._table, self._optimal = table(), candidates("value")

    def reply(self, board: str, seed: int) -> int:
        cands = self._optimal[self._table.state(board)]
        met, script = self.met[seed], self.scripts[seed]
        n = len(met)
        met.append(len(cands))
        return cands[script[n] if n < len(script) else 0]

    def __repr__(self) -> str:
        return "BranchOpponent(optimal, every tie-break)"


@dataclass
class Walk:
    records: list[GameRecord] = field(default_factory=list)
    probability: list[float] = field(default_factory=list)
    """Each line's probability under the optimal opponent, given who moves first."""

    def rates(self, first: bool | None = None) -> dict[str, float]:
        """W/D/L (and invalid: lines with an invalid reply) probabilities; `first` None: the mean of
        both sides, as the evaluation alternates who moves first."""
        if first is None:
            a, b = self.rates(True), self.rates(False)
            return {k: (a[k] + b[k]) / 2 for k in a}
        out = {"win": 0.0, "draw": 0.0, "loss": 0.0, "invalid": 0.0, "lines": 0}
        for r, p in zip(self.records, self.probability, strict=True):
            if r.example.model_first != first:
                continue
            out["lines"] += 1
            out["win" if r.outcome == "win" else "draw" if r.outcome == "draw" else "loss"] += p
            out["invalid"] += p * (r.invalid_moves > 0)
        return out


def walk_lines(play: Callable[[list[Example], BranchOpponent], list[GameRecord]], *, model_symbol: str = "X",
               sides: Sequence[bool] = (True, False), max_rounds: int = 9) -> Walk:
    """Every line of a deterministic player against the optimal opponent; `play(examples,
    opponent)` plays one game per example and returns their records in order."""
    pending: list[tuple[bool, tuple[int, ...]]] = [(first, ()) for first in sides]
    out = Walk()
    for _ in range(max_rounds):
        if not pending:
            break
        examples = [Example(index=i, seed=WALK_SEED + i, p_random=0.0, model_first=first, model_symbol=model_symbol,
                            stratum=-1) for i, (first, _) in enumerate(pending)]
        opponent = BranchOpponent({ex.seed: script for ex, (_, script) in zip(examples, pending, strict=True)})
        records = play(examples, opponent)
        following = []
        for ex, (first, script), record in zip(examples, pending, records, strict=True):
            met = opponent.met[ex.seed]
            out.records.append(record)
            out.probability.append(math.prod(1.0 / k for k in met))
            for n in range(len(script), len(met)):
                base = script + (0,) * (n - len(script))
                following += [(first, (*base, alt)) for alt in range(1, met[n])]
        pending = following
    if pending:
        raise RuntimeError(f"the walk did not end in {max_rounds} rounds")
    return out


def walk(model, tokenizer, env, *, bf16: bool, max_new_tokens: int, model_symbol: str = "X",
         sides: Sequence[bool] = (True, False)) -> Walk:
    """Every line of `model`'s greedy policy against the optimal opponent, through the engine."""
    import torch

    from ttt_lab.engine.generation import Sampling
    from ttt_lab.engine.rollout import play_rollouts

    def play(examples: list[Example], opponent: BranchOpponent) -> list[GameRecord]:
        rollouts = play_rollouts(model, tokenizer, examples, env, opponent, Sampling(0.0, max_new_tokens, bf16),
                                 generator=torch.Generator().manual_seed(0))
        return [ro.record for ro in rollouts if ro.record is not None]

    return walk_lines(play, model_symbol=model_symbol, sides=sides)
