"""Stability flags: rules over one run's logged curves, each saying what fired and where.

Curves are lists of (step, value). The rules are deliberately simple and documented in the
report itself (`RULES`), so a reader can check a flag by eye on the plotted curve. Every rule
compares within one training phase (`train/phase`): a recipe that switches to stronger
opponents drops its reward on purpose, and that planned change is not a collapse.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from ttt_lab.config.schema import StabilityConfig

Curve = list[tuple[int, float]]


RULES = {
    "collapse": "reward ends more than {collapse_drop:.0%} below its best and stays there over the last "
                "{collapse_tail:.0%} of steps; or reward_std < {dead_std} and entropy < {dead_entropy} at the end "
                "with reward below {low_reward}",
    "invalid_surge": "invalid moves per game over the last quarter exceed the first quarter's by {invalid_surge}",
    "format_loss": "format rate over the last quarter falls {format_drop:.0%} below its best quarter",
    "divergence": "grad_norm exceeds {spike_factor:g} x its median",
    "reward_without_skill": "reward rises from the first quarter to the last while the optimal-move rate (moves "
                            "that keep the game's value) falls by more than {skill_drop}: the reward is won with "
                            "moves a stronger opponent would punish",
    "(all rules)": "compare within one training phase; a drop at a phase boundary (a planned change of opponents "
                   "or temperature) fires nothing",
}


@dataclass(frozen=True)
class Flag:
    rule: str
    step: int
    detail: str


def _tail(curve: Curve, fraction: float) -> Curve:
    n = max(1, round(len(curve) * fraction))
    return curve[-n:]


def _mean(curve: Curve) -> float:
    return statistics.fmean(v for _, v in curve)


def collapse(reward: Curve, reward_std: Curve, entropy: Curve, c: StabilityConfig) -> Flag | None:
    if len(reward) >= 4:
        best_step, best = max(reward, key=lambda p: p[1])
        tail = _tail(reward, c.collapse_tail)
        if best > 0 and best_step < tail[0][0] and all(v < best * (1 - c.collapse_drop) for _, v in tail):
            return Flag("collapse", tail[0][0], f"reward {best:.3f} at step {best_step}, then {_mean(tail):.3f} "
                        f"over the last {len(tail)} logged steps")
    if reward_std and entropy and reward:
        s, e, r = reward_std[-1][1], entropy[-1][1], reward[-1][1]
        if s < c.dead_std and e < c.dead_entropy and r < c.low_reward:
            return Flag("collapse", reward[-1][0], f"reward_std {s:.3f}, entropy {e:.3f}, reward {r:.3f} at the end")
    return None


def invalid_surge(invalid: Curve, c: StabilityConfig) -> Flag | None:
    if len(invalid) < 4:
        return None
    q = max(1, len(invalid) // 4)
    first, last = _mean(invalid[:q]), _mean(invalid[-q:])
    if last - first > c.invalid_surge:
        return Flag("invalid_surge", invalid[-q][0], f"invalid moves per game {first:.2f} -> {last:.2f}")
    return None


def format_loss(fmt: Curve, c: StabilityConfig) -> Flag | None:
    if len(fmt) < 4:
        return None
    q = max(1, len(fmt) // 4)
    quarters = [fmt[i : i + q] for i in range(0, len(fmt), q)]
    best = max(_mean(x) for x in quarters)
    last = _mean(fmt[-q:])
    if best - last > c.format_drop:
        return Flag("format_loss", fmt[-q][0], f"format rate {best:.2f} at best, {last:.2f} at the end")
    return None


def divergence(grad_norm: Curve, c: StabilityConfig) -> Flag | None:
    if len(grad_norm) < 4:
        return None
    median = statistics.median(v for _, v in grad_norm)
    spikes = [(s, v) for s, v in grad_norm if median > 0 and v > c.spike_factor * median]
    if spikes:
        s, v = max(spikes, key=lambda p: p[1])
        return Flag("divergence", s, f"grad_norm {v:.3g} at step {s} vs median {median:.3g} ({len(spikes)} spikes)")
    return None


def phase_starts(curves: dict[str, Curve]) -> list[tuple[int, int]]:
    """(first step, phase index) of every phase, from the `train/phase` curve; one phase from
    step 0 when the run logged none."""
    starts: list[tuple[int, int]] = []
    for step, value in sorted(curves.get("train/phase", [])):
        if not starts or int(value) != starts[-1][1]:
            starts.append((step, int(value)))
    return starts or [(0, 0)]


def _within(curve: Curve, lo: int, hi: int | None) -> Curve:
    return [(s, v) for s, v in curve if s >= lo and (hi is None or s < hi)]


def reward_without_skill(reward: Curve, optimal: Curve, c: StabilityConfig) -> Flag | None:
    if len(reward) < 4 or len(optimal) < 4:
        return None
    qr, qo = max(1, len(reward) // 4), max(1, len(optimal) // 4)
    r0, r1 = _mean(reward[:qr]), _mean(reward[-qr:])
    o0, o1 = _mean(optimal[:qo]), _mean(optimal[-qo:])
    if r1 > r0 and o0 - o1 > c.skill_drop:
        return Flag("reward_without_skill", optimal[-qo][0],
                    f"reward {r0:.3f} -> {r1:.3f} while the optimal-move rate fell {o0:.3f} -> {o1:.3f}")
    return None


def flags(curves: dict[str, Curve], c: StabilityConfig | None = None) -> list[Flag]:
    """All rules over one run's curves (`train/reward`, `train/reward_std`, `train/entropy`,
    `train/game/invalid_per_game`, `train/game/format_rate`, `train/grad_norm`), phase by phase."""
    c = c or StabilityConfig()
    starts = phase_starts(curves)
    out: list[Flag] = []
    for i, (lo, phase) in enumerate(starts):
        hi = starts[i + 1][0] if i + 1 < len(starts) else None

        def part(key: str, lo: int = lo, hi: int | None = hi) -> Curve:
            return _within(curves.get(key, []), lo, hi)

        found = [collapse(part("train/reward"), part("train/reward_std"), part("train/entropy"), c),
                 invalid_surge(part("train/game/invalid_per_game"), c),
                 format_loss(part("train/game/format_rate"), c),
                 divergence(part("train/grad_norm"), c),
                 reward_without_skill(part("train/reward"), part("train/game/optimal_move_rate"), c)]
        where = f" (phase {phase})" if len(starts) > 1 else ""
        out += [Flag(f.rule, f.step, f.detail + where) for f in found if f is not None]
    return out


def rules_text(c: StabilityConfig | None = None) -> dict[str, str]:
    c = c or StabilityConfig()
    return {k: v.format(**asdict(c)) for k, v in RULES.items()}
