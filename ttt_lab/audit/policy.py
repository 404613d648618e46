"""Policy audit (memorisation probe): does a player hold its own against optimal opponents
that differ only in how they break ties and in how the board is turned?

A policy that learned to play, rather than one line against one opponent, draws against
every member of the panel alike. The published failure (99 % draws against the
first-tie-break minimax, clueless elsewhere) shows up as the *training* opponent far above the
rest of the panel.

Effective sample sizes: a greedy policy against a deterministic member plays at most two
distinct games (one per side to start), so 100 games would be 100 copies. Every member
therefore plays a random move with probability `audit.policy.noise` (seeded per example and
position, so members meet the same noise), and every interval counts *distinct* games.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from statistics import fmean

from ttt_lab.audit.checks import FAIL, PASS, WARN, Audit, Check, upper
from ttt_lab.audit.exact_panel import ExactMember, exact_panel, member_distribution
from ttt_lab.config.schema import Config
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import Player, play_games
from ttt_lab.env.lines import Line, tree_lines
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.env.tree import play_tree, tree_symbol
from ttt_lab.evaluation.metric_names import POLICY_CHECKS
from ttt_lab.game.board import threats
from ttt_lab.game.opponents import MinimaxOpponent, Opponent
from ttt_lab.game.seeding import derive_seed
from ttt_lab.game.solver import table
from ttt_lab.game.symmetry import CELL_MAPS, INVERSES, NAMES, transform
from ttt_lab.stats.rates import wilson

PANEL_SALT = 0x9A4E1


class ConjugatedOpponent:
    """`base` playing on the board turned by symmetry k: the same opponent, another orientation."""

    def __init__(self, base: Opponent, k: int) -> None:
        self.base, self.k = base, k

    def reply(self, board: str, seed: int) -> int:
        return CELL_MAPS[INVERSES[self.k]][self.base.reply(transform(board, self.k), seed)]

    def __repr__(self) -> str:
        return f"{self.base!r}@{NAMES[self.k]}"


@dataclass
class Member:
    name: str
    opponent: Opponent
    seed_set: int
    is_training: bool = False
    """The training opponent itself (same rule, same seeds): the member memorisation is measured on."""


@dataclass
class MemberResult:
    name: str
    games: int
    wins: int
    draws: int
    losses: int
    invalid: int
    distinct: int = 0
    """Distinct games (move sequences): the effective sample size of this member's rates."""

    @property
    def held(self) -> int:
        """Games not lost (against an optimal opponent: draws, and wins it should never give)."""
        return self.wins + self.draws

    def interval(self, k: int) -> tuple[float, float]:
        """Wilson interval of k of the games, sized by the distinct games behind them."""
        return effective_interval(k, self.games, self.distinct)

    def as_dict(self) -> dict:
        lo, hi = self.interval(self.held)
        dlo, dhi = self.interval(self.draws)
        llo, lhi = self.interval(self.losses)
        n = self.games or 1
        return {"name": self.name, "games": self.games, "distinct_games": self.distinct, "win_rate": self.wins / n,
                "draw_rate": self.draws / n, "draw_lo": dlo, "draw_hi": dhi, "loss_rate": self.losses / n,
                "loss_lo": llo, "loss_hi": lhi, "held_rate": self.held / n, "held_lo": lo, "held_hi": hi,
                "invalid_moves": self.invalid}


CHECKS = POLICY_CHECKS
"""The names of the checks built below, kept in the metric registry
(`ttt_lab.evaluation.metric_names`; tests/studies/test_checks.py keeps the two in step)."""


def effective_interval(k: int, games: int, distinct: int) -> tuple[float, float]:
    """The Wilson interval of a rate k / games when only `distinct` of the games are independent."""
    n = max(1, min(games, distinct or games))
    return wilson(round(n * k / games) if games else 0, n)


def _same_rule(a: Opponent, b: Opponent) -> bool:
    """The same way of choosing moves (a built-in minimax: tie-break and scoring; noise aside)."""
    if isinstance(a, MinimaxOpponent) and isinstance(b, MinimaxOpponent):
        return (a.tie_break, a.scoring) == (b.tie_break, b.scoring)
    return repr(a) == repr(b)


def panel(training: Opponent, scoring: str, seed_sets: int, noise: float = 0.0) -> list[Member]:
    """Optimal opponents (each with `noise` random moves): first/last tie-break, random
    tie-break under several seed sets, and the training opponent in each of the 8 orientations.
    A member that is the training opponent under its seeds is marked `is_training`."""
    members = [Member("minimax-first", MinimaxOpponent("first", scoring, noise), 0),
               Member("minimax-last", MinimaxOpponent("last", scoring, noise), 0)]
    members += [Member(f"minimax-random-s{i}", MinimaxOpponent("random", scoring, noise), i) for i in range(seed_sets)]
    for m in members:
        m.is_training = m.seed_set == 0 and _same_rule(m.opponent, training)
    members += [Member(f"training@{NAMES[k]}", training if k == 0 else ConjugatedOpponent(training, k), 0, k == 0)
                for k in range(8)]
    return members


def panel_examples(cfg: Config, games: int, seed_set: int):
    noise = cfg.audit.policy.noise
    ds = DatasetConfig(size=games, p_min=noise, p_max=noise, num_strata=1, sampling="iid", examples_per_batch=games,
                       first_player="alternate", model_symbol=cfg.dataset.model_symbol)
    return make_dataset(ds, derive_seed(cfg.audit.seed ^ PANEL_SALT, seed_set))


def _result(name: str, records: list[GameRecord]) -> MemberResult:
    c = Counter(r.outcome for r in records)
    distinct = len({(r.model_mark, tuple(r.moves)) for r in records})
    return MemberResult(name, len(records), c.get("win", 0), c.get("draw", 0),
                        len(records) - c.get("win", 0) - c.get("draw", 0), sum(r.invalid_moves for r in records),
                        distinct)


def memorisation_check(results: list[MemberResult], training: list[bool], min_gap: float) -> Check:
    """The training opponent against the rest of the panel: FAIL when the policy holds (draws
    or wins) more than `min_gap` more games against the opponent it trained on than against the
    others, beyond both 95 % intervals (each sized by its distinct games); WARN when the gap is
    there but the intervals overlap. Doing well against some other deterministic member is not
    memorisation: the policy never met it."""
    mine = [r for r, t in zip(results, training, strict=True) if t]
    rest = [r for r, t in zip(results, training, strict=True) if not t]
    held, games, distinct = (sum(r.held for r in mine), sum(r.games for r in mine), sum(r.distinct for r in mine))
    r_held, r_games, r_distinct = (sum(r.held for r in rest), sum(r.games for r in rest),
                                   sum(r.distinct for r in rest))
    gap = held / games - r_held / r_games
    separated = effective_interval(held, games, distinct)[0] > effective_interval(r_held, r_games, r_distinct)[1]
    status = FAIL if gap > min_gap and separated else WARN if gap > min_gap else PASS
    rates = [r.held / r.games for r in results]
    detail = (f"the training opponent is held (draw or win) in {held / games:.1%} of {games} games ({distinct} "
              f"distinct), the rest of the panel in {r_held / r_games:.1%} of {r_games} ({r_distinct} distinct): "
              f"{gap:+.1%}{' beyond the 95% intervals' if separated else ''}; spread over the panel "
              f"{max(rates) - min(rates):.1%}")
    return Check("memorisation.gap", gap, f"<= {min_gap:g} or intervals overlap", status, detail)


def fork_allowed(record: GameRecord | Line) -> bool:
    """After some move of the policy, the opponent could make two winning threats at once
    while the policy had no win of its own to answer with."""
    t = table()
    s = 0
    me = record.model_mark
    them = "O" if me == "X" else "X"
    for by, cell in record.moves:
        s = t.children[s][cell]
        if by != "model" or t.terminal[s]:
            continue
        for c in t.legal[s]:
            after = t.children[s][c]
            board = t.boards[after]
            if not t.terminal[after] and threats(board, them) >= 2 and threats(board, me) == 0:
                return True
    return False


def agreement(records: list[GameRecord] | list[Line]) -> tuple[float, list[dict]]:
    """Share of the policy's moves that keep the value, and the positions it most often gets wrong."""
    t = table()
    agree = total = 0
    wrong: Counter[tuple[str, int]] = Counter()
    for r in records:
        s = 0
        for by, cell in r.moves:
            if by == "model":
                total += 1
                if cell in t.optimal[s]:
                    agree += 1
                else:
                    wrong[(t.boards[s], cell)] += 1
            s = t.children[s][cell]
    worst = [{"board": b, "move": m, "optimal": list(t.optimal[t.index[b]]), "count": n}
             for (b, m), n in wrong.most_common(10)]
    return (agree / total if total else 1.0), worst


def tree_lines_of(player: Player, cfg: Config) -> list[GameRecord] | list[Line]:
    """The policy's games against every reply at every turn, both sides, for the first symbol it
    is shown: read off the tree the evaluation expanded where it is shared (a greedy model's),
    otherwise played (`play_tree`)."""
    from ttt_lab.evaluation.exact import reply_distribution
    from ttt_lab.evaluation.trees import policy_tree, shared_key

    symbol = tree_symbol(cfg.dataset.model_symbol)
    policy, _why = reply_distribution(cfg, player)
    if policy is not None and shared_key(policy, cfg) is not None:
        return tree_lines(policy_tree(policy, cfg), symbol)
    return play_tree(player, cfg.env, model_symbol=symbol)


def tree_check(player: Player, cfg: Config) -> tuple[Check, dict]:
    """The policy against every opponent reply at every turn, both sides (`env.tree`): for a
    greedy policy every line lost there is one some opponent can force, counted exactly."""
    records = tree_lines_of(player, cfg)
    lost = [r for r in records if r.outcome not in ("win", "draw")]
    forks = sum(fork_allowed(r) for r in records)
    invalid = sum(r.invalid_moves > 0 for r in records)
    share, worst = agreement(records)
    detail = (f"against every reply: {len(lost)} of {len(records)} lines not held (lost, forfeited or capped), "
              f"{forks} with a fork allowed, {invalid} with an invalid reply; {share:.1%} of its moves keep the value")
    data = {"games": len(records), "not_held": len(lost), "forks_allowed": forks, "invalid_lines": invalid,
            "optimal_agreement": share, "disagreements": worst}
    # Informational: a policy of a few hundred games' training may lose a line that no opponent it
    # will meet plays; the verdicts stay with the panel's checks.
    return Check("tree.lines_not_held", float(len(lost)), "informational", PASS, detail), data


def exact_memorisation_check(results: list[ExactMember], training: list[bool], min_gap: float) -> Check:
    """The memorisation check on expected rates: FAIL when the training opponent is held more
    than `min_gap` more often than the rest of the panel even at the cut paths' worst, WARN when
    only their mass could make it so."""
    mine = [r for r, t in zip(results, training, strict=True) if t]
    rest = [r for r, t in zip(results, training, strict=True) if not t]
    held, r_held = fmean(r.held for r in mine), fmean(r.held for r in rest)
    u, r_u = fmean(r.unexplored for r in mine), fmean(r.unexplored for r in rest)
    gap, lo, hi = held - r_held, held - r_held - r_u, held + u - r_held
    status = FAIL if lo > min_gap else WARN if hi > min_gap else PASS
    rates = [r.held for r in results]
    bounds = f" (bounds {lo:+.1%} to {hi:+.1%}: paths cut below eval.min_prob)" if u or r_u else ""
    detail = (f"exact: the training opponent is held (draw or win) in {held:.1%} of games in expectation, the rest "
              f"of the panel in {r_held:.1%}: {gap:+.1%}{bounds}; spread over the panel {max(rates) - min(rates):.1%}")
    return Check("memorisation.gap", gap, f"<= {min_gap:g}", status, detail)


def _exact_members(cfg: Config, player: Player, members: list[Member]):
    """The policy's distribution and each member's, or None where any cannot be read off (or
    `eval.mode=sampled` asks for games)."""
    from ttt_lab.evaluation.exact import reply_distribution

    if cfg.eval.mode == "sampled":
        return None
    policy, _why = reply_distribution(cfg, player)
    dists = [member_distribution(m.opponent) for m in members]
    if policy is None or any(d is None for d in dists):
        return None
    return policy, [(m.name, d) for m, d in zip(members, dists, strict=True)]


def walks_exactly(cfg: Config, player: Player, training: Opponent) -> bool:
    """Whether `audit_policy` walks the exact tree for this player (no games to count)."""
    return _exact_members(cfg, player, panel(training, cfg.opponent.scoring, 1, cfg.audit.policy.noise)) is not None


def _exact_audit(cfg: Config, player: Player, members: list[Member], policy, dists) -> Audit:
    a = cfg.audit.policy
    results = exact_panel(cfg, policy, dists)
    training = [m.is_training for m in members]
    moves = sum(r.moves for r in results)
    audit = Audit("policy", repr(player))
    audit.checks = [
        exact_memorisation_check(results, training, a.min_gap),
        upper("fork_allowed_rate", fmean(r.fork for r in results), a.max_fork_rate, 1.0,
              f"probability, averaged over the {len(results)} panel members, that the policy lets the opponent set "
              "up two winning lines (exact)"),
        Check("optimal_agreement", sum(r.optimal for r in results) / moves if moves else 1.0, "informational", PASS,
              "share of the policy's moves that keep the perfect-play value (exact, expected over the panel)"),
    ]
    invalid = sum(r.invalid for r in results)
    if invalid:
        audit.checks.append(Check("invalid_moves", invalid, "0", WARN,
                                  f"{invalid:.3f} invalid replies per game in expectation, summed over the panel"))
    audit.data = {"mode": "exact", "members": [r.as_dict() | {"training": t} for r, t in zip(results, training,
                                                                                              strict=True)],
                  "noise": a.noise, "tree": None}
    return audit


def audit_policy(cfg: Config, player: Player, training: Opponent,
                 on_finished: Callable[[int], None] | None = None) -> Audit:
    """The panel on the exact tree walk where the policy's and every member's moves can be read
    off (`eval.mode` auto or exact); otherwise sampled games, `audit.policy.games` per member."""
    start = time.perf_counter()
    a = cfg.audit.policy
    # In expectation a random tie-break's seed sets are one opponent: the exact panel needs one.
    exact_panel_members = panel(training, cfg.opponent.scoring, 1, a.noise)
    exact = _exact_members(cfg, player, exact_panel_members)
    if exact is not None:
        audit = _exact_audit(cfg, player, exact_panel_members, *exact)
        if a.tree:
            tree, audit.data["tree"] = tree_check(player, cfg)
            audit.checks.append(tree)
        audit.seconds = time.perf_counter() - start
        return audit
    members = panel(training, cfg.opponent.scoring, a.seed_sets, a.noise)
    results, records = [], []
    for m in members:
        examples = panel_examples(cfg, a.games, m.seed_set)
        games = play_games(player, examples, cfg.env, m.opponent, max_batch=cfg.eval.batch_size,
                           on_finished=on_finished)
        results.append(_result(m.name, games))
        records += games
    audit = Audit("policy", repr(player))
    forks = sum(fork_allowed(r) for r in records) / len(records)
    share, worst = agreement(records)
    audit.checks = [
        memorisation_check(results, [m.is_training for m in members], a.min_gap),
        upper("fork_allowed_rate", forks, a.max_fork_rate, 1.0,
              f"share of {len(records)} games where the policy let the opponent set up two winning lines"),
        Check("optimal_agreement", share, "informational", PASS,
              "share of the policy's moves that keep the perfect-play value"),
    ]
    tree_data = None
    if a.tree:
        tree, tree_data = tree_check(player, cfg)
        audit.checks.append(tree)
    invalid = sum(r.invalid for r in results)
    if invalid:
        audit.checks.append(Check("invalid_moves", float(invalid), "0", WARN,
                                  f"{invalid} invalid moves over {len(records)} panel games"))
    audit.data = {"members": [r.as_dict() | {"training": m.is_training} for r, m in zip(results, members, strict=True)],
                  "disagreements": worst, "games_per_member": a.games, "noise": a.noise, "tree": tree_data}
    audit.seconds = time.perf_counter() - start
    return audit


__all__ = ["FAIL", "PASS", "WARN", "ConjugatedOpponent", "audit_policy", "panel"]
