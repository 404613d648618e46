"""Exact evaluation: a policy's expected rates against every suite opponent, from its game tree.

`eval.mode`: `exact` walks the tree (no sampling noise: the rates are expectations over the
opponents' dice, not estimates), `sampled` plays `eval.games` games, `auto` walks where the
policy's move distribution can be read off and samples otherwise, saying why in one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ttt_lab.config.schema import EVAL_MODES, Config, SuiteEntry  # noqa: F401  (EVAL_MODES: the schema's)
from ttt_lab.env.exact import ReplyDistribution, Totals, Tree, evaluate_tree
from ttt_lab.errors import TttLabError
from ttt_lab.evaluation.trees import largest_of, opponent_distribution, policy_tree, starts, suite_bound

EXPLOITER = "exploiter"
"""The best response's summary name: `eval/exploiter/*` and `eval/exploitability`."""


class ExactUnavailable(TttLabError):
    """`eval.mode=exact` for a player or setting whose move distribution cannot be read off."""


@dataclass(frozen=True)
class ExactSummary:
    """Expected rates against one opponent; `*_lo`/`*_hi` are deterministic bounds (equal to the
    rate when nothing was left unexplored)."""

    opponent: str
    totals: Totals
    seconds: float = 0.0
    mode = "exact"
    points = ()

    @property
    def games(self) -> int:
        """The distinct games (lines) the walk reached against this opponent."""
        return self.totals.lines

    @property
    def unexplored(self) -> float:
        return self.totals.unexplored

    def outcome_rates(self) -> dict[str, tuple[float, float, float]]:
        t, u = self.totals, self.totals.unexplored
        return {name: (v, v, min(1.0, v + u)) for name, v in (("win", t.win), ("draw", t.draw), ("loss", t.loss))}

    def _share(self, k: float) -> tuple[float, float, float]:
        """k per model message, with bounds for the messages unexplored paths could still add."""
        t, extra = self.totals, self.totals.unexplored_turns
        if t.turns + extra <= 0:
            return 0.0, 0.0, 0.0
        rate = k / t.turns if t.turns else 0.0
        return rate, k / (t.turns + extra), (k + extra) / (t.turns + extra)

    @property
    def invalid_rate(self) -> float:
        return self._share(self.totals.invalid)[0]

    @property
    def format_rate(self) -> float:
        return self._share(self.totals.in_format)[0]

    @property
    def model_turns_mean(self) -> float:
        return self.totals.turns

    @property
    def reward_mean(self) -> float:
        return self.totals.reward

    @property
    def points_mean(self) -> float:
        return self.totals.points

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else float("inf")

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        p = f"{prefix}/{self.opponent}"
        out: dict[str, float] = {}
        for name, (rate, lo, hi) in self.outcome_rates().items():
            out |= {f"{p}/{name}_rate": rate, f"{p}/{name}_rate_lo": lo, f"{p}/{name}_rate_hi": hi}
        rate, lo, hi = self._share(self.totals.invalid)
        out |= {f"{p}/invalid_rate": rate, f"{p}/invalid_rate_lo": lo, f"{p}/invalid_rate_hi": hi}
        out[f"{p}/format_rate"] = self.format_rate
        out[f"{p}/mean_turns"] = self.model_turns_mean
        out[f"{p}/reward"] = self.reward_mean
        out[f"{p}/games"] = float(self.games)
        out[f"{p}/unexplored"] = self.unexplored
        out[f"{prefix}/mode"] = 1.0
        if self.opponent == EXPLOITER:  # the loss against the best response: 0 when no opponent can win
            out[f"{prefix}/exploitability"] = self.totals.loss
            out[f"{prefix}/exploitability_hi"] = min(1.0, self.totals.loss + self.unexplored)
        return out


def exact_suite(policy: ReplyDistribution, cfg: Config, suite: Sequence[SuiteEntry],
                on_level: Callable[[int], None] | None = None, *, exploiter: bool = False) -> list[ExactSummary]:
    """One summary per suite entry; with `exploiter`, one more (`EXPLOITER`, last) against the best
    response, from the same tree expanded with every opponent reply (a superset of the suite's)."""
    start = time.perf_counter()
    tree = policy_tree(policy, cfg, None if exploiter else suite_bound(suite), on_level=on_level)
    walked = time.perf_counter() - start
    out = []
    for entry in suite:
        t0 = time.perf_counter()
        totals = evaluate_tree(tree, opponent_distribution(entry))
        out.append(ExactSummary(entry.name, totals, walked / len(suite) + time.perf_counter() - t0))
    if exploiter:
        out.append(exploitability(tree))
    return out


def exploitability(tree: Tree) -> ExactSummary:
    """The policy against the best response to it (`tree` expanded with every opponent reply):
    its loss rate is the exploitability."""
    t0 = time.perf_counter()
    totals = evaluate_tree(tree, None)
    return ExactSummary(EXPLOITER, totals, time.perf_counter() - t0)


def unavailable_reason(cfg: Config, *, temperature: float, scripted: bool, readable: bool) -> str | None:
    """Why exact evaluation cannot apply here, or None when it can."""
    if scripted:
        return None
    if not readable:
        return (f"player.kind={cfg.player.kind} gives replies, not their probabilities (an endpoint's "
                "distribution cannot be read off)")
    if temperature > 0 and cfg.env.think == "required":
        return (f"at temperature {temperature:g} with env.think=required the replies are free text whose "
                "probabilities cannot all be listed")
    return None


def resolve_mode(cfg: Config, reason: str | None) -> tuple[str, str]:
    """The mode to use and a one-line note (empty when nothing needs saying). Raises when
    `eval.mode=exact` was asked for and `reason` says why it cannot be."""
    mode = cfg.eval.mode
    if mode == "sampled":
        return "sampled", ""
    if reason is None:
        return "exact", ""
    if mode == "exact":
        raise ExactUnavailable(
            f"eval.mode=exact cannot evaluate this player: {reason}. Use eval.mode=sampled (or auto, which "
            "samples where the tree cannot be walked) to play eval.games games per opponent instead.")
    return "sampled", f"eval.mode=auto: sampled, because {reason}"


def reply_distribution(cfg: Config, player: object) -> tuple[ReplyDistribution | None, str | None]:
    """The player's move distribution for the tree walk, or None and why it cannot be read off."""
    from ttt_lab.players.distributions import GreedyDistribution, ScoredDistribution, ScriptedDistribution
    from ttt_lab.players.hf import HFPlayer
    from ttt_lab.players.scripted import ScriptedPlayer

    if isinstance(player, ScriptedPlayer):
        return ScriptedDistribution(player), None
    if isinstance(player, HFPlayer):
        t = player.temperature
        reason = unavailable_reason(cfg, temperature=t, scripted=False, readable=True)
        if reason is not None:
            return None, reason
        if t == 0:
            return GreedyDistribution(player), None
        return ScoredDistribution(player.model, player.tokenizer, temperature=t, max_new_tokens=player.max_new_tokens,
                                  batch_size=player.batch_size), None
    return None, unavailable_reason(cfg, temperature=0.0, scripted=False, readable=False)


__all__ = ["EXPLOITER", "ExactSummary", "ExactUnavailable", "exact_suite", "exploitability", "largest_of",
           "opponent_distribution", "policy_tree", "reply_distribution", "resolve_mode", "starts",
           "unavailable_reason"]
