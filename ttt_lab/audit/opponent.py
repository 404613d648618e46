"""Opponent audit: does an opponent break ties fairly, play perfectly, add the noise it
claims, answer reproducibly per (seed, position), and treat every board orientation alike?

Every check samples the opponent through its public `reply(board, seed)` over every
reachable position where it has to move, under `seeds` example seeds, so built-in and
user-defined opponents are audited alike.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ttt_lab.audit.checks import FAIL, PASS, WARN, Audit, Check, lower, skipped, upper
from ttt_lab.audit.fresh_process import Replay, as_cell
from ttt_lab.config.build import build_opponent
from ttt_lab.config.schema import OpponentAuditConfig, OpponentConfig
from ttt_lab.game.opponents import Opponent, TableOpponent
from ttt_lab.game.seeding import derive_seed
from ttt_lab.game.solver import candidates, table
from ttt_lab.game.symmetry import CELL_MAPS, transform
from ttt_lab.stats.rates import chi2_sf, normalised_entropy

REPLAY_SEEDS = 8
RANDOM_TARGET = "ttt_lab.game.opponents.RandomOpponent"
AUDIT_SALT = 0xA0D17


@dataclass
class Sample:
    """Replies of one opponent: `replies[i][j]` at position `states[i]` under seed `seeds[j]`."""

    states: list[int]
    seeds: list[int]
    replies: list[list[int]]

    def counts(self, i: int) -> list[int]:
        c = [0] * 9
        for m in self.replies[i]:
            if 0 <= m < 9:
                c[m] += 1
        return c


def audit_seeds(seed: int, n: int) -> list[int]:
    return [derive_seed(seed ^ AUDIT_SALT, i) for i in range(n)]


def sample(opponent: Opponent, seeds: list[int]) -> Sample:
    t = table()
    states = [s for s in range(len(t.boards)) if not t.terminal[s]]
    if isinstance(opponent, TableOpponent) and type(opponent).reply is TableOpponent.reply:
        # Built-ins: the same computation as reply(board, seed), without the per-call board lookup.
        keys = [opponent.key(seed) for seed in seeds]
        fast, p = opponent.reply_state, opponent.p_random
        return Sample(states, seeds, [[fast(s, k, p) for k in keys] for s in states])
    reply = opponent.reply
    return Sample(states, seeds, [[as_cell(reply(t.boards[s], seed)) for seed in seeds] for s in states])


FAST_SHARE = 0.99
"""An opponent draws from a subset of the value-keeping moves (the fastest-win / slowest-loss
ones, or those that win most often against random play) when at least this share of its
picks, at positions where that subset is smaller than the value-keeping moves, lies inside it."""

SUBSETS = ("fast", "exploit")
SET_NAMES = {"value": "value-keeping moves", "fast": "fastest-win / slowest-loss moves",
             "exploit": "moves that win most often against random play"}


def tie_sets(scoring: str) -> tuple[tuple[int, ...], ...]:
    """The moves the opponent should be indifferent between, per state."""
    return candidates(scoring)


def subset_share(smp: Sample, scoring: str) -> tuple[float, int]:
    """The share of the opponent's optimal picks inside `scoring`'s subset, at the positions where
    that subset is smaller than the value-keeping moves (and how many such positions)."""
    t, sub = table(), candidates(scoring)
    inside = total = positions = 0
    for i, s in enumerate(smp.states):
        subset, opt = set(sub[s]), set(t.optimal[s])
        if len(opt) < 2 or subset == opt:
            continue
        positions += 1
        picks = [m for m in smp.replies[i] if m in opt]
        inside += sum(m in subset for m in picks)
        total += len(picks)
    return (inside / total if total else 0.0), positions


def detect_tie_set(smp: Sample) -> tuple[str, float, int]:
    """Which set of best moves the opponent draws from, read off its own picks (not its
    config): ("value" | "fast" | "exploit", share of picks inside the subset tried last or found,
    positions where it differs from the value-keeping moves). A user class that prefers quick
    wins is then compared with the moves it chooses among, like the built-in `scoring: fast`."""
    share, positions = 0.0, 0
    for scoring in SUBSETS:
        share, positions = subset_share(smp, scoring)
        if share >= FAST_SHARE:
            return scoring, share, positions
    return "value", share, positions


def tie_break_checks(smp: Sample, ties: tuple[tuple[int, ...], ...], a: OpponentAuditConfig
                     ) -> tuple[list[Check], dict]:
    dominated = positions = 0
    entropy = chi2 = 0.0
    df = 0
    obs_cells = [0.0] * 9
    exp_cells = [0.0] * 9
    n = len(smp.seeds)
    for i, s in enumerate(smp.states):
        eq = ties[s]
        if len(eq) < 2:
            continue
        positions += 1
        counts = smp.counts(i)
        inside = [counts[c] for c in eq]
        total = sum(inside)
        dominated += max(counts) >= a.dominance * n
        entropy += normalised_entropy(inside)
        if total:
            e = total / len(eq)
            chi2 += sum((o - e) ** 2 / e for o in inside)
            df += len(eq) - 1
            for c, o in zip(eq, inside, strict=True):
                obs_cells[c] += o
                exp_cells[c] += e
    share = dominated / positions if positions else 0.0
    mean_h = entropy / positions if positions else 1.0
    p = chi2_sf(chi2, df)
    n_obs = sum(obs_cells) or 1.0
    tv = 0.5 * sum(abs(o - e) / n_obs for o, e in zip(obs_cells, exp_cells, strict=True))
    where = f"{positions} positions with 2+ equally good moves, {n} seeds each"
    checks = [
        upper("tie_break.dominated_share", share, a.dominated_warn, a.dominated_fail,
              f"positions where one move takes >= {a.dominance:.0%} of picks; {where}"),
        lower("tie_break.entropy", mean_h, a.entropy_warn, a.entropy_fail,
              "mean normalised entropy of the picks over the equally good moves (1 = uniform)"),
        lower("tie_break.chi2_p", p, a.p_warn, a.p_fail,
              f"chi-square against uniform tie-breaking: {chi2:.1f} on {df} df"),
        upper("cell_preference.tv", tv, a.cell_tv_warn, a.cell_tv_fail,
              "total variation between the chosen cells and what uniform tie-breaking predicts"),
    ]
    data = {"cells_observed": [o / n_obs for o in obs_cells], "cells_expected": [e / n_obs for e in exp_cells],
            "tie_positions": positions}
    return checks, data


def optimality_check(smp: Sample, a: OpponentAuditConfig) -> Check:
    t = table()
    good = illegal = total = 0
    for i, s in enumerate(smp.states):
        opt = t.optimal[s]
        for m in smp.replies[i]:
            total += 1
            good += m in opt
            illegal += m not in t.legal[s]
    share = good / total
    status = FAIL if illegal or share < a.min_optimal else PASS
    return Check("optimality", share, f">= {a.min_optimal:g} (and no illegal replies)", status,
                 f"{total - good} of {total} replies with p_random=0 give away the value; {illegal} illegal")


def noise_check(smp: Sample, p: float, a: OpponentAuditConfig,
                aims: tuple[tuple[int, ...], ...] | None = None) -> Check:
    """Non-optimal replies should number p x (non-optimal share of the legal moves), summed.
    `aims`: the replies the opponent plays when not playing at random (default: the optimal ones)."""
    t = table()
    obs = 0
    expected = var = weight = 0.0
    for i, s in enumerate(smp.states):
        legal, opt = t.legal[s], t.optimal[s] if aims is None else aims[s]
        r = (len(legal) - len(opt)) / len(legal)
        if r == 0:
            continue
        q = p * r
        for m in smp.replies[i]:
            obs += m not in opt
            expected += q
            var += q * (1 - q)
            weight += r
    if weight == 0 or var == 0:
        return skipped("noise_calibration", "no position where a random move can be told from a minimax one")
    z = (obs - expected) / math.sqrt(var)
    p_hat = obs / weight
    half = 1.959963984540054 * math.sqrt(var) / weight
    status = FAIL if abs(z) > a.noise_z_fail else WARN if abs(z) > a.noise_z_warn else PASS
    return Check("noise_calibration", p_hat, f"|z| <= {a.noise_z_warn:g} PASS, <= {a.noise_z_fail:g} WARN", status,
                 f"measured random-move share {p_hat:.4f} [{p_hat - half:.4f}, {p_hat + half:.4f}] "
                 f"against configured {p:g} (z = {z:+.2f})")


def exploiting(opponent: Opponent | None):
    """An exploiter's exploiting games (`ExploiterOpponent.exploiting`), None for other opponents."""
    from ttt_lab.game.exploiter import ExploiterOpponent

    return opponent.exploiting() if isinstance(opponent, ExploiterOpponent) else None


def aim_check(smp: Sample, aims: tuple[tuple[int, ...], ...]) -> Check:
    """With p_random=0 every reply is one the opponent says it aims for (and legal)."""
    t = table()
    off = total = 0
    for i, s in enumerate(smp.states):
        for m in smp.replies[i]:
            total += 1
            off += m not in aims[s] or m not in t.legal[s]
    return Check("optimality", (total - off) / total, "every reply among its best replies",
                 FAIL if off else PASS, f"a best response, not minimax: {off} of {total} replies with "
                 "p_random=0 outside the replies that hurt its policy most")


def replay_picks(n_states: int) -> range:
    return range(0, n_states, 7)


def consistency_checks(opponent: Opponent, smp: Sample, cfg: OpponentConfig, p: float,
                       replay: Replay | None) -> list[Check]:
    t = table()
    picks = replay_picks(len(smp.states))
    k = REPLAY_SEEDS
    again = [[as_cell(opponent.reply(t.boards[smp.states[i]], seed)) for seed in smp.seeds[:k]] for i in picks]
    mine = [smp.replies[i][:k] for i in picks]
    same_process = sum(x != y for r1, r2 in zip(again, mine, strict=True) for x, y in zip(r1, r2, strict=True))
    detail = f"{len(again) * k} replies asked twice in this process: {same_process} differ"
    mismatches = same_process
    if replay is not None:
        other = replay.result()
        across = sum(x != y for r1, r2 in zip(other, mine, strict=True) for x, y in zip(r1, r2, strict=True))
        detail += f"; in a fresh process: {across} differ"
        mismatches += across
    checks = [Check("seed_consistency", float(mismatches), "0 differing replies", FAIL if mismatches else PASS, detail)]
    varied = choice = 0
    for i, s in enumerate(smp.states):
        if len(t.legal[s]) >= 2:
            choice += 1
            varied += len(set(smp.replies[i])) > 1
    share = varied / choice if choice else 1.0
    checks.append(lower("seed_variation", share, 0.99, 0.5,
                        f"positions with a choice where different seeds give different replies (p_random={p:g})"))
    seeding_ok = cfg.seeding == "per_example"
    checks.append(Check("episode_seeding", None, "per_example", PASS if seeding_ok else WARN,
                        "rollouts of one example meet the same replies" if seeding_ok else
                        "opponent.seeding=per_game: the rollouts of one GRPO group meet different opponents"))
    return checks


def symmetry_check(smp: Sample, a: OpponentAuditConfig) -> Check:
    """Chi-square homogeneity, per class of symmetric positions, of the reply distributions
    mapped back to the class's canonical orientation."""
    t = table()
    by_class: dict[str, list[list[int]]] = {}
    for i, s in enumerate(smp.states):
        board = t.boards[s]
        images = [transform(board, k) for k in range(8)]
        canon = min(images)
        k = images.index(canon)
        counts = smp.counts(i)
        mapped = [0] * 9
        for cell, c in enumerate(counts):
            mapped[CELL_MAPS[k][cell]] += c
        by_class.setdefault(canon, []).append(mapped)
    chi2, df, classes = 0.0, 0, 0
    for rows in by_class.values():
        if len(rows) < 2:
            continue
        cols = [sum(r[c] for r in rows) for c in range(9)]
        used = [c for c in range(9) if cols[c]]
        if len(used) < 2:
            continue
        classes += 1
        grand = sum(cols)
        for r in rows:
            n = sum(r)
            for c in used:
                e = n * cols[c] / grand
                chi2 += (r[c] - e) ** 2 / e
        df += (len(rows) - 1) * (len(used) - 1)
    p = chi2_sf(chi2, df)
    return lower("symmetry.chi2_p", p, a.p_warn, a.p_fail,
                 f"{classes} classes of symmetric positions; chi-square homogeneity {chi2:.1f} on {df} df")


def audit_opponent(cfg: OpponentConfig, make: Callable[[float], Opponent | None], a: OpponentAuditConfig,
                   seed: int) -> Audit:
    """`make(p)` builds the opponent with random-move probability p (None: it takes no p_random)."""
    start = time.perf_counter()
    first = make(0.0)
    takes_p = first is not None
    base = first if first is not None else build_opponent(cfg)  # as configured: its class takes no p_random
    seeds = audit_seeds(seed, a.seeds)
    is_random = cfg._target_ == RANDOM_TARGET
    p = cfg.p_random if cfg.p_random > 0 and not is_random else a.noise_p
    noisy = make(p) if takes_p and not is_random else None
    # An exploiter is audited in its exploiting games (its others are the minimax opponent's): its
    # ties are its own best replies; a fresh process cannot rebuild a best response it was handed.
    own = exploiting(base)
    if own is not None:
        base, noisy = own, exploiting(noisy) if noisy is not None else None
        cfg = dataclasses.replace(cfg, exploit_share=1.0)
    handed = own is not None and own.has_table
    replay = None
    if a.processes and not handed:
        t = table()
        states = [s for s in range(len(t.boards)) if not t.terminal[s]]
        boards = [t.boards[states[i]] for i in replay_picks(len(states))]
        replay = Replay(cfg, 0.0 if noisy is None else p, boards, seeds[:REPLAY_SEEDS])
    smp = sample(base, seeds)
    audit = Audit("opponent", repr(base))
    if handed:
        aims = own.tie_sets()
        checks, data = tie_break_checks(smp, aims, a)
        audit.data.update(data | {"tie_set": "best_response"})
        checks.insert(0, Check("tie_break.set", None, "its own best replies", PASS,
                               "an exploiter draws among the replies that hurt its policy most; the tie-break "
                               "checks below use those"))
        checks.append(aim_check(smp, aims))
    else:
        aims = None
        found, share, where = detect_tie_set(smp)
        checks, data = tie_break_checks(smp, tie_sets(found), a)
        audit.data.update(data | {"tie_set": found})
        subset = found if found != "value" else SUBSETS[-1]
        checks.insert(0, Check("tie_break.set", share, f"a subset if >= {FAST_SHARE:g}", PASS,
                               f"draws from the {SET_NAMES[found]}: {share:.1%} of its picks at the {where} "
                               f"positions where the {SET_NAMES[subset]} are fewer lie among them; the tie-break "
                               "checks below use that set"))
        checks.append(skipped("optimality", "the random opponent does not aim for optimal play") if is_random
                      else optimality_check(smp, a))
    if noisy is None:
        checks.append(skipped("noise_calibration", "the random opponent has no minimax moves to mix with"
                              if is_random else "this opponent class takes no p_random"))
        checks += consistency_checks(base, smp, cfg, 0.0, replay)
    else:
        noisy_smp = sample(noisy, seeds)
        checks.append(noise_check(noisy_smp, p, a, aims))
        checks += consistency_checks(noisy, noisy_smp, cfg, p, replay)
    checks.append(skipped("symmetry.chi2_p", "a best response follows its policy, which need not treat every "
                          "orientation alike") if handed else symmetry_check(smp, a))
    audit.checks = checks
    audit.data["seeds"] = a.seeds
    audit.seconds = time.perf_counter() - start
    return audit


__all__ = ["FAIL", "PASS", "WARN", "audit_opponent", "audit_seeds", "sample"]
