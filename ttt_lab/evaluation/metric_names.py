"""The metrics a study trial ends with, by name: the one registry a study's objective (and its
collapse endpoint, which reads the first objective) is checked against before anything runs.

Derived from the code that produces them, not copied: the fields are those `Summary.metrics` and
`ExactSummary.metrics` write (read off empty summaries), the opponents those of the training
suite every trial's final evaluation plays, the audit's check names
(POLICY_CHECKS, which `ttt_lab.audit.policy` builds).
A metric of the user's own is declared `custom: true` on its objective and is not checked here."""

from __future__ import annotations

import functools

from ttt_lab.config.schema import SuiteEntry

TRAINING_SUITE = (SuiteEntry("random", opponent="random"), SuiteEntry("optimal"))
"""The opponents of every training run's (and study trial's) final evaluation."""
PREFIX = "eval"
AUDIT_PREFIX = "audit/policy/"
"""A trial's policy audit (`audit.policy.in_studies=true`) logs `audit/policy/<check>`."""
POLICY_CHECKS = ("memorisation.gap", "fork_allowed_rate", "optimal_agreement", "tree.lines_not_held",
                 "invalid_moves")
"""The policy audit's checks (`ttt_lab.audit.policy`), each logged by its name under AUDIT_PREFIX."""


def _fields(metrics: dict[str, float], opponent: str) -> set[str]:
    start = f"{PREFIX}/{opponent}/"
    return {k.removeprefix(start) for k in metrics if k.startswith(start)}


@functools.cache
def summary_fields() -> tuple[str, ...]:
    """What follows `eval/<opponent>/` in a final evaluation's metrics (sampled or exact)."""
    from ttt_lab.env.exact import Totals
    from ttt_lab.evaluation.exact import ExactSummary
    from ttt_lab.evaluation.summary import Summary

    sampled = Summary("x", 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0).metrics(PREFIX)
    exact = ExactSummary("x", Totals()).metrics(PREFIX)
    return tuple(sorted(_fields(sampled, "x") | _fields(exact, "x")))


@functools.cache
def exact_only() -> tuple[str, ...]:
    """The metrics only an exact evaluation of a greedy policy writes: the best response's."""
    from ttt_lab.env.exact import Totals
    from ttt_lab.evaluation.exact import EXPLOITER, ExactSummary

    out = ExactSummary(EXPLOITER, Totals()).metrics(PREFIX)
    return tuple(sorted(k for k in out if k != f"{PREFIX}/mode"))


@functools.cache
def trial_metrics() -> dict[str, str]:
    """Every metric name a study trial can end with -> where it comes from, in words."""
    out = {f"{PREFIX}/{e.name}/{f}": f"the final evaluation against {e.name}" for e in TRAINING_SUITE
           for f in summary_fields()}
    out[f"{PREFIX}/mode"] = "the final evaluation (1 exact, 0 sampled)"
    out |= {m: "the exact final evaluation's best response (a greedy policy)" for m in exact_only()}
    out |= {f"{AUDIT_PREFIX}{c}": "the trial's policy audit (audit.policy.in_studies=true)" for c in POLICY_CHECKS}
    return dict(sorted(out.items()))


def is_logged(metric: str) -> bool:
    return metric in trial_metrics()


def nearest(metric: str, n: int = 3) -> list[str]:
    """The registered names closest to `metric` (a typo's likely meaning)."""
    import difflib

    return difflib.get_close_matches(metric, list(trial_metrics()), n=n, cutoff=0.6)
