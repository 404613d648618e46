"""The exact tree walk against values computed here, independently of the solver and the walk."""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.load import load
from ttt_lab.config.schema import SuiteEntry
from ttt_lab.env.driver import play_games
from ttt_lab.env.exact import evaluate_tree, expand_tree
from ttt_lab.evaluation.exact import exact_suite, opponent_distribution, starts
from ttt_lab.game.opponents import RandomOpponent
from ttt_lab.players.distributions import ScriptedDistribution
from ttt_lab.players.scripted import minimax_player, random_player
from ttt_lab.stats.rates import wilson

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def winner(b: str) -> str | None:
    for i, j, k in LINES:
        if b[i] != "." and b[i] == b[j] == b[k]:
            return b[i]
    return None


@cache
def negamax(b: str, me: str) -> int:
    """Perfect-play value of board `b` for the side to move (`me`): +1, 0, -1."""
    other = "O" if me == "X" else "X"
    if winner(b):
        return -1
    free = [i for i in range(9) if b[i] == "."]
    if not free:
        return 0
    return max(-negamax(b[:i] + me + b[i + 1 :], other) for i in free)


def best(b: str, me: str) -> list[int]:
    other = "O" if me == "X" else "X"
    free = [i for i in range(9) if b[i] == "."]
    vals = {i: -negamax(b[:i] + me + b[i + 1 :], other) for i in free}
    top = max(vals.values())
    return [i for i, v in vals.items() if v == top]


@cache
def outcome(b: str, to_move: str, model: str, model_policy: str) -> tuple[float, float, float]:
    """(win, draw, loss) for the model, both sides choosing uniformly among their policy's moves."""
    w = winner(b)
    if w:
        return (1.0, 0.0, 0.0) if w == model else (0.0, 0.0, 1.0)
    free = [i for i in range(9) if b[i] == "."]
    if not free:
        return 0.0, 1.0, 0.0
    moves = best(b, to_move) if (to_move == model and model_policy == "minimax") else free
    nxt = "O" if to_move == "X" else "X"
    parts = [outcome(b[:i] + to_move + b[i + 1 :], nxt, model, model_policy) for i in moves]
    return tuple(sum(p[k] for p in parts) / len(parts) for k in range(3))  # type: ignore[return-value]


def independent(model_policy: str) -> tuple[float, float, float]:
    first = outcome("." * 9, "X", "X", model_policy)
    second = outcome("." * 9, "X", "O", model_policy)
    return tuple((a + b) / 2 for a, b in zip(first, second, strict=True))  # type: ignore[return-value]


@pytest.fixture(scope="module")
def cfg():
    return load(["env.think=off", "tracking.enabled=false"]).cfg


@pytest.mark.parametrize(("player", "name"), [(random_player(think=False), "random"),
                                              (minimax_player(think=False), "minimax")])
def test_scripted_players_against_random_equal_an_independent_computation(cfg, player, name) -> None:
    (got,) = exact_suite(ScriptedDistribution(player), cfg, [SuiteEntry("random", opponent="random")])
    want = independent(name)
    assert (got.totals.win, got.totals.draw, got.totals.loss) == pytest.approx(want, abs=1e-12)
    assert got.unexplored == 0.0
    assert got.invalid_rate == 0.0 and got.format_rate == 1.0


class _NotMarkov(ScriptedDistribution):
    """The same distribution, walked as a model's would be: one node per conversation, cut by probability."""

    markov = False


def test_a_cut_tree_bounds_contain_the_full_trees_value(cfg) -> None:
    policy = _NotMarkov(minimax_player(think=False, p_random=0.3))
    opp = opponent_distribution(SuiteEntry("optimal"))
    full = evaluate_tree(expand_tree(policy, cfg.env, starts(cfg), min_prob=0.0, opponent_bound=opp), opp)
    cut = evaluate_tree(expand_tree(policy, cfg.env, starts(cfg), min_prob=2e-3, opponent_bound=opp), opp)
    assert full.unexplored == 0.0 and 0.0 < cut.unexplored < 1.0
    for name in ("win", "draw", "loss"):
        lo = getattr(cut, name)
        assert lo - 1e-12 <= getattr(full, name) <= lo + cut.unexplored + 1e-12
    markov = ScriptedDistribution(minimax_player(think=False, p_random=0.3))
    shared = evaluate_tree(expand_tree(markov, cfg.env, starts(cfg), opponent_bound=opp), opp)
    assert (shared.win, shared.draw, shared.loss) == pytest.approx((full.win, full.draw, full.loss), abs=1e-12)


class Sloppy:
    """A planted policy: with probability `bad` an occupied cell or text without a move, else the
    first free cell. Sampled by `respond`, read off by `distributions`."""

    def __init__(self, bad: float, seed: int = 0) -> None:
        self.bad, self.rng = bad, random.Random(seed)

    def _options(self, board: str) -> list[tuple[str, float]]:
        free = [i for i in range(9) if board[i] == "."]
        taken = [i for i in range(9) if board[i] != "."]
        bad = [f"<move>{i}</move>" for i in taken[:1]] + ["I pass."]
        return [(f"<move>{free[0]}</move>", 1 - self.bad)] + [(b, self.bad / len(bad)) for b in bad]

    def distributions(self, turns):
        return [self._options(t.board) for t in turns]

    def respond(self, turns):
        out = []
        for t in turns:
            replies, weights = zip(*self._options(t.board), strict=True)
            out.append(self.rng.choices(replies, weights)[0])
        return out


@pytest.mark.parametrize("penalty", ["flat", "forfeit"])
def test_invalid_replies_retry_and_cap_as_in_play_agreeing_with_sampled_games(penalty: str) -> None:
    cfg = load(["env.think=off", "env.max_model_turns=5", f"env.penalty.mode={penalty}",
                "tracking.enabled=false"]).cfg
    entry = SuiteEntry("random", opponent="random")
    (exact,) = exact_suite(Sloppy(0.3), cfg, [entry])
    from ttt_lab.evaluation.suite import suite_examples

    examples = suite_examples(cfg.__class__(**{**cfg.__dict__, "eval": cfg.eval.__class__(
        **{**cfg.eval.__dict__, "games": 4000})}), 0, entry)
    records = play_games(Sloppy(0.3, seed=1), examples, cfg.env, RandomOpponent())
    n = len(records)
    for name, want in (("win", exact.totals.win), ("loss", exact.totals.loss)):
        k = sum((r.outcome == "win") if name == "win" else (r.outcome not in ("win", "draw")) for r in records)
        lo, hi = wilson(k, n, z=3.29)  # 99.9 %: two checks per case, no flakes
        assert lo <= want <= hi, (name, k / n, want)
    assert exact.unexplored == pytest.approx(0.0, abs=1e-6)
    assert exact.invalid_rate > 0.2


@settings(max_examples=15)
@given(st.floats(0.0, 0.5), st.sampled_from(["X", "O", "alternate"]))
def test_outcome_probabilities_sum_to_one_for_any_planted_policy(bad: float, symbol: str) -> None:
    cfg = load(["env.think=off", "env.max_model_turns=4", f"dataset.model_symbol={symbol}",
                "tracking.enabled=false"]).cfg
    (got,) = exact_suite(Sloppy(bad), cfg, [SuiteEntry("optimal")])
    assert got.totals.win + got.totals.draw + got.totals.loss + got.unexplored == pytest.approx(1.0, abs=1e-9)
    assert got.totals.win == pytest.approx(0.0, abs=1e-12)  # nobody beats the optimal opponent
