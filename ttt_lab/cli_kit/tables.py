"""Rich tables of the API's results and of the domain's `events.Table`s. Cells are data: no markup
is read from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ttt_lab import events
from ttt_lab.formats import pct, points
from ttt_lab.pages import fmt

if TYPE_CHECKING:
    from ttt_lab.api import AuditResult, EvalResult, TrainResult
    from ttt_lab.evaluation.summary import Summary

STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim"}


def rich_table(t: events.Table) -> Table:
    out = Table(title=escape(t.title), caption=escape(t.caption) or None, title_justify="left")
    for col in t.columns:
        out.add_column(escape(col), overflow="fold")
    for row in t.rows:
        out.add_row(*map(escape, row))
    return out


def rate_cell(rate: float, lo: float, hi: float, exact: bool) -> str:
    """A sampled rate with its interval; an exact one alone, or with its bounds where the tree was cut."""
    if exact and hi - lo < 5e-7:
        return pct(rate)
    return f"{pct(rate)} [{pct(lo)}, {pct(hi)}]"


def caption(exact: bool) -> str:
    if exact:
        return ("exact expected rates in % (the policy's game tree walked, every opponent reply weighted by its "
                "probability: no sampling interval; lower and upper bounds where paths were left unexplored); "
                "invalid = invalid moves per model message; games = distinct lines reached")
    return "rates in %, [95 % Wilson interval]; invalid = invalid moves per model message"


def eval_table(result: EvalResult) -> Table:
    """One row per suite opponent: outcome rates with their intervals, invalid and format rates, speed."""
    summaries = result.summaries
    exact = bool(summaries) and summaries[0].mode == "exact"
    t = Table(title=escape(f"{result.player} vs suite '{result.suite}'"), caption=caption(exact))
    for col in ("opponent", "games", "win", "draw", "loss", "invalid", "format", "turns", "games/s"):
        t.add_column(col, justify="left" if col == "opponent" else "right")
    for s in summaries:
        rates = s.outcome_rates()
        t.add_row(escape(s.opponent), str(s.games), *(rate_cell(*rates[k], exact) for k in ("win", "draw", "loss")),
                  pct(s.invalid_rate), pct(s.format_rate), f"{s.model_turns_mean:.2f}", f"{s.games_per_s:,.0f}")
    return t


def train_table(result: TrainResult) -> Table:
    """The final policy (and the warm-up, when there was one) against each evaluation opponent."""
    exact = result.final[0].mode == "exact"
    how = "exact (the game tree walked)" if exact else f"{result.games} games per opponent (same games for every row)"
    table = Table(title=f"greedy policy, {how}", caption=caption(exact))
    for col in ("checkpoint", "opponent", "win", "draw", "loss", "invalid", "format"):
        table.add_column(col)
    rows: list[tuple[str, Summary]] = [("SFT", s) for s in result.sft or []] + [("final", s) for s in result.final]
    for name, s in rows:
        rates = s.outcome_rates()
        table.add_row(name, escape(s.opponent), *(rate_cell(*rates[k], exact) for k in ("win", "draw", "loss")),
                      pct(s.invalid_rate), pct(s.format_rate))
    return table


def gains_line(result: TrainResult) -> str:
    """The final policy against the warm-up, per opponent ('' without a warm-up)."""
    if not result.gains:
        return ""
    if result.final[0].mode == "exact":
        return "final against SFT, exact: " + "; ".join(
            f"{g.opponent} {points(g.points_delta)} points per 100 games" for g in result.gains)
    return "final against SFT, game by game: " + "; ".join(
        f"{g.opponent} {g.better} better, {g.worse} worse (sign test p = {g.p_value:.3g})" for g in result.gains)


def audit_table(result: AuditResult) -> Table:
    audit = result.audit
    style = STATUS_STYLE[audit.status]
    t = Table(title=f"{escape(audit.kind)} audit: {escape(audit.subject)}  [{style}]{audit.status}[/]",
              title_justify="left")
    for col in ("check", "value", "threshold", "status", "detail"):
        t.add_column(col, overflow="fold", justify="right" if col == "value" else "left")
    for c in audit.checks:
        t.add_row(escape(c.name), fmt(c.value), escape(c.threshold),
                  f"[{STATUS_STYLE[c.status]}]{c.status}[/]", escape(c.detail))
    return t

