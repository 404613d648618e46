"""The schema's `audit:` and `report:` sections: the audits' thresholds and the report's
stability rules (part of `config.schema`, kept apart to stay readable)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.env.settings import check_integer, check_number


@dataclass
class OpponentAuditConfig:
    seeds: int = 64
    """Example seeds sampled per position."""
    noise_p: float = 0.3
    """Random-move probability for the noise calibration when `opponent.p_random` is 0."""
    dominance: float = 0.95
    """A move 'takes nearly all picks' at a position when its share is at least this."""
    dominated_warn: float = 0.02
    dominated_fail: float = 0.2
    """Share of tie positions dominated by one move: WARN / FAIL above these."""
    entropy_warn: float = 0.9
    entropy_fail: float = 0.6
    """Mean normalised entropy over the equally good moves: WARN / FAIL below these."""
    p_warn: float = 1.0e-3
    p_fail: float = 1.0e-6
    """Chi-square p-values (uniform tie-breaking, symmetry): WARN / FAIL below these."""
    cell_tv_warn: float = 0.03
    cell_tv_fail: float = 0.1
    """Total variation between chosen cells and what uniform tie-breaking predicts."""
    min_optimal: float = 1.0
    """Share of replies that keep the value with p_random=0 (a minimax opponent must be perfect)."""
    noise_z_warn: float = 3.0
    noise_z_fail: float = 5.0
    """|z| of the measured random-move share against the configured probability."""
    processes: bool = True
    """Also replay a sample in a fresh process (cross-process seed consistency)."""


@dataclass
class DatasetAuditConfig:
    balanced_warn: float = 1.0
    balanced_fail: float = 0.9
    """Share of batches with every stratum within one example of its mean: WARN / FAIL below these."""
    balance_z_warn: float = 3.0
    balance_z_fail: float = 5.0
    """|z| of the model-first and model-shown-as-X shares against 1/2 (when they are meant to balance)."""


@dataclass
class PolicyAuditConfig:
    games: int = 100
    """Games against each panel member, split evenly over who moves first."""
    seed_sets: int = 3
    """Random tie-break members, each under its own set of example seeds."""
    min_gap: float = 0.1
    """Non-loss rate gap between the training opponent and the rest that counts as memorisation."""
    noise: float = 0.1
    """Every panel member plays a random move with this probability (seeded per example and
    position): a greedy policy then meets many distinct games, not copies of two. 0: exact."""
    in_studies: bool = True
    """Every study trial audits its final checkpoint (the memorisation probe and fork rate go on
    the trial's run and into the report); false to skip it."""
    max_fork_rate: float = 0.05
    """WARN above this share of games where the policy lets the opponent fork."""
    tree: bool = True
    """Also play the policy against every opponent reply at every turn (`tree.lines_not_held`):
    exact for a greedy policy; the audit's slowest part (timings: docs/benchmarks.md)."""


@dataclass
class StabilityConfig:
    """Thresholds of the report's stability flags (see ttt_lab/report/stability.py)."""

    collapse_drop: float = 0.3
    """Collapse: reward falls this fraction below its best (relative to the best)..."""
    collapse_tail: float = 0.25
    """...and stays down over this last fraction of the run."""
    dead_std: float = 0.02
    dead_entropy: float = 0.05
    """Collapse too: reward_std and entropy both below these at the end, with low reward."""
    low_reward: float = 0.5
    invalid_surge: float = 0.5
    """Invalid moves per game rising by this much above the run's first quarter."""
    format_drop: float = 0.2
    """Format rate falling this much below its best."""
    spike_factor: float = 10.0
    """Divergence: a grad_norm above this many times the run's median."""
    skill_drop: float = 0.05
    """Reward without skill: within a phase the reward rises while the share of value-keeping moves
    falls by more than this (first quarter against last)."""


@dataclass
class ReportConfig:
    stability: StabilityConfig = field(default_factory=StabilityConfig)


@dataclass
class AuditConfig:
    seed: int = 0
    out: str = "${home}/audits"
    opponent: OpponentAuditConfig = field(default_factory=OpponentAuditConfig)
    dataset: DatasetAuditConfig = field(default_factory=DatasetAuditConfig)
    policy: PolicyAuditConfig = field(default_factory=PolicyAuditConfig)


def validate_audit(a: AuditConfig) -> None:
    check_integer("audit.opponent.seeds", a.opponent.seeds, 2)
    check_number("audit.opponent.noise_p", a.opponent.noise_p, 0.0, 1.0)
    for name in ("dominance", "dominated_warn", "dominated_fail", "entropy_warn", "entropy_fail", "p_warn", "p_fail",
                 "cell_tv_warn", "cell_tv_fail", "min_optimal"):
        check_number(f"audit.opponent.{name}", getattr(a.opponent, name), 0.0, 1.0)
    check_integer("audit.policy.games", a.policy.games, 2)
    check_integer("audit.policy.seed_sets", a.policy.seed_sets, 1)
    check_number("audit.policy.min_gap", a.policy.min_gap, 0.0, 1.0)
    check_number("audit.policy.noise", a.policy.noise, 0.0, 1.0)
    check_number("audit.policy.max_fork_rate", a.policy.max_fork_rate, 0.0, 1.0)
    for name in ("noise_z_warn", "noise_z_fail"):
        check_number(f"audit.opponent.{name}", getattr(a.opponent, name), 0.0)
    for name in ("balanced_warn", "balanced_fail"):
        check_number(f"audit.dataset.{name}", getattr(a.dataset, name), 0.0, 1.0)
    for name in ("balance_z_warn", "balance_z_fail"):
        check_number(f"audit.dataset.{name}", getattr(a.dataset, name), 0.0)


def validate_report(r: ReportConfig) -> None:
    """The stability flags' thresholds: shares in [0, 1], rises and floors finite and not negative,
    the spike factor at least 1 (a NaN would switch a flag off: every comparison with it is false)."""
    st = r.stability
    for name in ("collapse_drop", "collapse_tail", "format_drop", "skill_drop"):
        check_number(f"report.stability.{name}", getattr(st, name), 0.0, 1.0)
    for name in ("dead_std", "dead_entropy", "invalid_surge"):
        check_number(f"report.stability.{name}", getattr(st, name), 0.0)
    check_number("report.stability.low_reward", st.low_reward)
    check_number("report.stability.spike_factor", st.spike_factor, 1.0)
