"""A greedy policy against every tie-break branch of the optimal opponent, through the batched
engine: the exact W/D/L against the evaluation's optimal opponent (minimax, `value` scoring,
ties at random), and every position that opponent can lead the policy to.

The optimal opponent picks uniformly among its value-keeping moves, so a line's probability is
the product of 1/k over its choices. The walk plays the games in rounds: each game follows a
script (at the opponent's n-th move, the position it expects and which candidate to take there;
the first past its end); a game that met a choice of k candidates beyond its script spawns k-1
new scripts for the next round. A greedy policy plays the same prefix again, so the rounds
enumerate the tree; the lines' count is the tree's leaves (at most a few hundred). A model's
greedy reply can still change with the batch it is computed in (its rounding does): a replay
that leaves its script's positions goes on from there as a new line, a line met twice is kept
once, and the count of such replays is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ttt_lab.env.dataset import Example
from ttt_lab.env.record import GameRecord
from ttt_lab.game.solver import candidates, table

WALK_SEED = 0x0B7A1


Choice = tuple[int, int]
"""(the position's state, a candidate's index there, or the count of candidates when met)."""


class BranchOpponent:
    """The optimal opponent told, per game seed, which of its candidates to play at each move;
    it plays the first candidate past its script, or from the first position its script did not
    expect (`left`: the move number where each such game left it)."""

    def __init__(self, scripts: dict[int, tuple[Choice, ...]]) -> None:
        self.scripts = scripts
        self.met: dict[int, list[Choice]] = {s: [] for s in scripts}
        self.taken: dict[int, list[int]] = {s: [] for s in scripts}
        self.left: dict[int, int] = {}
        self._table, self._optimal = table(), candidates("value")

    def reply(self, board: str, seed: int) -> int:
        state = self._table.state(board)
        cands = self._optimal[state]
        met, script = self.met[seed], self.scripts[seed]
        n = len(met)
        met.append((state, len(cands)))
        index = 0
        if n < len(script) and seed not in self.left:
            if script[n][0] == state:
                index = script[n][1]
            else:
                self.left[seed] = n
        self.taken[seed].append(index)
        return cands[index]

    def free_from(self, seed: int) -> int:
        """The first move of this game no script chose: its choices from there spawn new lines."""
        return self.left.get(seed, len(self.scripts[seed]))

    def __repr__(self) -> str:
        return "BranchOpponent(optimal, every tie-break)"


@dataclass
class Walk:
    records: list[GameRecord] = field(default_factory=list)
    probability: list[float] = field(default_factory=list)
    """Each line's probability under the optimal opponent, given who moves first."""
    replays_left: int = 0
    """Replays whose model reply differed from the first time (see the module's note)."""
    unwalked: int = 0
    """Scripts left when the rounds ran out (0 for a policy that replays its lines)."""

    def rates(self, first: bool | None = None) -> dict[str, float]:
        """W/D/L (and invalid: lines with an invalid reply) probabilities; `first` None: the mean of
        both sides, as the evaluation alternates who moves first."""
        if first is None:
            a, b = self.rates(True), self.rates(False)
            return {k: (a[k] + b[k]) / 2 for k in a}
        out = {"win": 0.0, "draw": 0.0, "loss": 0.0, "invalid": 0.0, "lines": 0}
        side = [(r, p) for r, p in zip(self.records, self.probability, strict=True) if r.example.model_first == first]
        mass = sum(p for _, p in side) or 1.0  # 1 unless a replay left its line (then over the lines walked)
        for r, p in side:
            out["lines"] += 1
            out["win" if r.outcome == "win" else "draw" if r.outcome == "draw" else "loss"] += p / mass
            out["invalid"] += p / mass * (r.invalid_moves > 0)
        return out


def walk_lines(play: Callable[[list[Example], BranchOpponent], list[GameRecord]], *, model_symbol: str = "X",
               sides: Sequence[bool] = (True, False), max_rounds: int = 16) -> Walk:
    """Every line of a deterministic player against the optimal opponent; `play(examples,
    opponent)` plays one game per example and returns their records in order."""
    pending: list[tuple[bool, tuple[Choice, ...]]] = [(first, ()) for first in sides]
    out, seen, scripted = Walk(), set(), set(pending)
    for _ in range(max_rounds):
        if not pending:
            break
        examples = [Example(index=i, seed=WALK_SEED + i, p_random=0.0, model_first=first, model_symbol=model_symbol,
                            stratum=-1) for i, (first, _) in enumerate(pending)]
        opponent = BranchOpponent({ex.seed: script for ex, (_, script) in zip(examples, pending, strict=True)})
        records = play(examples, opponent)
        following = []
        for ex, (first, _), record in zip(examples, pending, records, strict=True):
            met, taken = opponent.met[ex.seed], opponent.taken[ex.seed]
            out.replays_left += ex.seed in opponent.left
            line = (first, tuple((state, i) for (state, _), i in zip(met, taken, strict=True)))
            if line in seen:
                continue
            seen.add(line)
            out.records.append(record)
            out.probability.append(math.prod(1.0 / k for _, k in met))
            for n in range(opponent.free_from(ex.seed), len(met)):
                state, k = met[n]
                following += [(first, (*line[1][:n], (state, alt))) for alt in range(1, k)]
        pending = [p for p in dict.fromkeys(following) if p not in scripted]
        scripted.update(pending)
    out.unwalked = len(pending)
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
