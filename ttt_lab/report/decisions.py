"""The study's answer as decisions: each condition against the reference on each endpoint
(`ttt_lab.stats.decide`) — the probability of improvement first (better or worse on most seeds,
equivalent, unresolved), the mean difference and collapse beside it — as a section that leads the
report, a forest plot, and as data: `verdict.json` and `results.csv`."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from ttt_lab.formats import points
from ttt_lab.pages import Figures, Para, Table
from ttt_lab.report import figures
from ttt_lab.report.collect import FINAL_METRICS, Study, spec_of
from ttt_lab.stats import words
from ttt_lab.stats.decide import UNRESOLVED, Comparison, Decisions, decide
from ttt_lab.stats.design import ANYTIME, FIXED, MEAN_ALPHA, Design, default_bounds
from ttt_lab.studies.spec import DEFAULT_MARGIN
from ttt_lab.tracking import keys

METHOD = {ANYTIME: "probability of improvement: a confidence sequence from a mixture of bets on the seeds' scores "
                   "(better 1, tied 1/2, worse 0), valid at every seed count; mean difference: a betting confidence "
                   "sequence (Waudby-Smith & Ramdas 2024); Bonferroni across endpoints and comparisons",
          FIXED: "probability of improvement: an exact two-sided sign test at the declared looks (the binomial "
                 "counts every sign pattern, so every p-value from 2^(1-n) up is reachable; Holm within a "
                 "look, Pocock-type spending across looks, a look that cannot reject passing its share on); mean "
                 "difference: the betting confidence sequence, valid at any look"}


@dataclass
class Answer:
    metric: str
    direction: str
    reference: str
    margin: float
    looks: list[int]
    max_seeds: int | None
    means: dict[str, tuple[float, int]]
    """condition -> (mean over seeds, seeds)."""
    comparisons: list[Comparison]
    declared: bool = False
    """The reference is the study's declared baseline (else the best, corrected over every pair)."""
    study: str = "STUDY"
    values: dict[str, dict[Any, float]] | None = None
    """condition -> seed -> objective."""
    decisions: Decisions | None = None
    per_block: dict[str, list[Comparison]] | None = None
    """A blocked study (`blocks:`): each block decided on its own."""
    problem: str = ""
    """Why nothing could be decided (no range known for the objective), else empty."""

    def as_dict(self) -> dict:
        d = self.decisions
        design = d.design if d else Design(margin=self.margin)
        return {"metric": self.metric, "direction": self.direction, "reference": self.reference,
                "declared_reference": self.declared, "margin": self.margin, "bounds": list(design.bounds),
                "alpha": design.alpha, "alpha_split": {"improvement": design.improvement_alpha,
                                                       "mean": design.mean_alpha, "collapse": design.collapse_share},
                "delta": design.delta, "procedure": design.procedure, "looks": self.looks,
                "declared_looks": list(design.looks), "max_seeds": self.max_seeds,
                "error_spent": d.spent if d and design.procedure == FIXED else ([design.alpha] if d else []),
                "family": d.family if d else 0, "method": METHOD[design.procedure], "problem": self.problem,
                "collapse_below": design.collapse_below,
                "collapse": [r.as_dict() for r in d.collapse] if d else [],
                "blocks": {b: [c.as_dict() for c in cs] for b, cs in (self.per_block or {}).items()},
                "conditions": self._conditions(),
                "comparisons": [c.as_dict() for c in self.comparisons]}

    def _conditions(self) -> dict[str, dict]:
        from ttt_lab.stats.aggregates import aggregates

        out: dict[str, dict] = {c: {"mean": m, "seeds": n} for c, (m, n) in self.means.items()}
        for g in aggregates(self.values or {}, self.reference, maximize=self.direction == "maximize"):
            out[g.condition] |= {"iqm": g.iqm, "iqm_interval": _none([g.iqm_lo, g.iqm_hi]),
                                 "probability_of_improvement": _none([g.improvement])[0],
                                 "probability_of_improvement_interval": _none([g.improvement_lo, g.improvement_hi])}
        return out


def _none(xs: list[float]) -> list[float | None]:
    return [None if not math.isfinite(x) else x for x in xs]


def _float(text: str | None, default: float) -> float:
    try:
        return float(text) if text else default
    except ValueError:
        return default


def _design(study: Study, metric: str, margin: float) -> Design | None:
    tags = study.tags
    raw = [x for x in tags.get(keys.BOUNDS, "").split(",") if x.strip()]
    bounds = (float(raw[0]), float(raw[1])) if len(raw) == 2 else default_bounds(metric)
    if bounds is None:
        return None
    procedure = tags.get(keys.PROCEDURE) or ANYTIME
    looks = tuple(int(x) for x in tags.get(keys.DECLARED_LOOKS, "").split(",") if x.strip().isdigit())
    if procedure == FIXED and not looks:  # a fixed design without its declared looks cannot be replayed
        procedure = ANYTIME
    below = tags.get(keys.COLLAPSE_BELOW)
    collapse = {"collapse_below": _float(below, 0.0), "collapse_alpha": _float(tags.get(keys.COLLAPSE_ALPHA), 0.01)} \
        if below else {}
    return Design(procedure, margin, bounds, looks, mean_alpha=_float(tags.get(keys.MEAN_ALPHA), MEAN_ALPHA),
                  delta=_float(tags.get(keys.DELTA), 0.0), **collapse)


def answer(study: Study) -> Answer:
    objs = spec_of(study).get(keys.OBJECTIVES) or [{"metric": "eval/optimal/draw_rate", "direction": "maximize"}]
    metric, direction = objs[0]["metric"], objs[0].get("direction", "maximize")
    import json as _json

    from ttt_lab.studies import blocks

    blocked = _json.loads(study.tags.get(keys.BLOCKS) or "[]")
    by_cond, per_block = blocks.by_condition(
        [(t.overrides, t.seed, t.metrics[metric]) for ts in study.conditions().values() for t in ts
         if metric in t.metrics], blocked)
    means = {c: (fmean(v.values()), len(v)) for c, v in by_cond.items()}
    margin = _float(study.tags.get(keys.MARGIN), DEFAULT_MARGIN)
    looks = [int(x) for x in study.tags.get(keys.LOOKS, "").split(",") if x.strip().isdigit()]
    max_seeds = int(_float(study.tags.get(keys.MAX_SEEDS), 0)) or None
    if not means:
        return Answer(metric, direction, "-", margin, looks, max_seeds, {}, [])
    baseline = study.tags.get(keys.BASELINE, "")
    sign = 1 if direction == "maximize" else -1
    reference = baseline if baseline in means else max(means, key=lambda c: sign * means[c][0])
    design = _design(study, metric, margin)
    if design is None:
        return Answer(metric, direction, reference, margin, looks, max_seeds, means, [], declared=reference == baseline,
                      values=by_cond, study=study.name,
                      problem=f"the objective {metric} has no known range, and a valid decision needs one: declare "
                              "it in the study file (bounds: [low, high]) and report again.")
    maximize = direction == "maximize"
    result = decide(by_cond, reference=reference, declared=reference == baseline, metric=metric, design=design,
                    looks=looks, maximize=maximize)
    per = {b: decide(v, reference=reference, declared=reference == baseline, metric=metric, design=design,
                     looks=looks, maximize=maximize).comparisons for b, v in per_block.items() if reference in v}
    from ttt_lab.stats.projection import project

    project(result, max_seeds or max(n for _, n in means.values()), max(1, min(n for _, n in means.values())),
            maximize=maximize)
    return Answer(metric, direction, reference, margin, looks, max_seeds, means, result.comparisons,
                  declared=reference == baseline, values=by_cond, study=study.name, decisions=result,
                  per_block=per or None)


def _span(c: Comparison) -> str:
    return f"{points(c.difference)} points [{points(c.lo)}, {points(c.hi)}]"


def primary(c: Comparison, a: Answer) -> str:
    """The probability of improvement's sentence for one comparison, in the endpoint's words."""
    return words.primary(c, metric=a.metric, direction=a.direction, design=a.decisions.design if a.decisions else None)


def secondary(c: Comparison, a: Answer) -> str:
    """The mean difference's decision, named as such."""
    word = {"differs": f"{c.direction} by more than the margin", "differs, within the margin":
            f"{c.direction}, by less than ±{100 * a.margin:g} points", "equivalent": f"within ±{100 * a.margin:g}",
            "unresolved": "unresolved"}[c.mean_decision]
    return f"Mean difference of {c.condition} ({word}): {_span(c)}."


def sentences(a: Answer) -> list[str]:
    if len(a.means) < 2:
        return [f"Only one condition ({a.reference}) finished: nothing to compare."]
    if a.problem:
        return [f"Nothing decided: {a.problem}"]
    kind = "the declared baseline" if a.declared else "the best, corrected for choosing it (every pair compared):"
    out = [f"Each condition against {kind} {a.reference} ({100 * a.means[a.reference][0]:.1f} on {a.metric}), "
           "first on the share of seeds on which it trained the better policy (the probability of improvement), "
           f"then on the mean difference (margin ±{100 * a.margin:g} points)."]
    for c in a.comparisons:
        out.append(primary(c, a))
        out.append(secondary(c, a))
    for block, comps in (a.per_block or {}).items():
        out.append(f"Within {block} alone: " + "; ".join(
            f"{c.condition} {c.decision} ({c.better} better, {c.worse} worse of {c.seeds})" for c in comps) + ".")
    if any(c.decision == UNRESOLVED for c in a.comparisons) and a.decisions and \
            a.decisions.design.procedure == ANYTIME:
        out.append(f"To go on: `ttt-lab sweep {a.study} --until-settled --max-seeds N` adds seeds to every condition, "
                   "reusing every finished trial; under anytime decisions more seeds never inflate the error rate.")
    return out


def _chances(c: Comparison) -> str:
    from ttt_lab.stats.projection import text

    return text(c.settle)


def section_blocks(a: Answer, svgs: dict[str, str]) -> list:
    blocks: list = [Para(s) for s in sentences(a)]
    if a.comparisons:
        svg = figures.forest_plot(f"P(better than {a.reference}) for each condition",
                                  [(c.condition, c.improvement - 0.5, c.improvement_lo - 0.5, c.improvement_hi - 0.5,
                                    c.decision) for c in a.comparisons],
                                  a.decisions.design.delta if a.decisions else 0.0,
                                  axis="probability of improvement minus 1/2 (points); shaded: ±delta")
        svgs["decisions.svg"] = svg
        blocks.append(Figures([("Decisions: probability of improvement and its interval per comparison", svg,
                                "decisions.svg")]))
        blocks.append(decision_table(a))
    blocks += collapse_blocks(a)
    blocks += seed_blocks(a)
    blocks += aggregate_blocks(a, svgs)
    if a.decisions:
        d = a.decisions
        spent = (f"error spent by the looks taken ({', '.join(map(str, d.looks))} of "
                 f"{', '.join(map(str, d.design.looks))}): {', '.join(f'{x:.4f}' for x in d.spent)}"
                 if d.design.procedure == FIXED else "valid after every seed, whatever the budget")
        g = d.design
        blocks.append(Para(f"Decisions ({g.procedure}, alpha {g.alpha:g} split before the first look: probability of "
                           f"improvement {g.improvement_alpha:g}, mean difference {g.mean_alpha:g}"
                           + (f", collapse {g.collapse_alpha:g}" if g.collapse_below is not None else "")
                           + f", each over {d.family} comparison(s)): {METHOD[g.procedure]}; {spent}. The mean's "
                           f"interval is for the mean difference, the objective bounded by {list(g.bounds)}. "
                           "verdict.json and results.csv beside this page hold the same answer as data.", "note"))
    return blocks


def decision_table(a: Answer) -> Table:
    """One row per comparison: each endpoint's decision and interval (the report's and the MLflow
    parent run's table)."""
    rows = [[c.condition, f"{c.better} / {c.worse} / {c.ties}",
             f"{c.improvement:.2f} [{c.improvement_lo:.2f}, {c.improvement_hi:.2f}]", c.decision,
             str(c.if_agree or "-") if c.decision == UNRESOLVED else "-", _p(c.p),
             f"{points(c.difference)} [{points(c.lo)}, {points(c.hi)}]", c.mean_decision,
             "paired" if c.paired else "matched in seed order", str(c.seeds),
             _chances(c) if c.decision == UNRESOLVED else "-"]
            for c in a.comparisons]
    return Table(["condition", "better / worse / tied", "P(improvement) [interval]", "decision",
                  "decides at (if the next agree)", "p (sign test)", "mean difference (points)", "mean decision",
                  "design", "seeds", "chance to settle"], rows)


def collapse_blocks(a: Answer) -> list:
    """The declared collapse endpoint: each arm's collapses beside the reference's, decided on the
    seeds where exactly one of them collapsed."""
    d = a.decisions
    if not d or not d.collapse:
        return []
    rows = [[r.condition, f"{r.collapsed} of {r.seeds} ({100 * r.rate:.0f} %)",
             f"{r.reference_collapsed} of {r.reference_seeds} ({100 * r.reference_rate:.0f} %)",
             f"{r.only_reference} / {r.only_condition}", str(r.needed or "-"),
             f"[{r.lo:.2f}, {r.hi:.2f}]" if math.isfinite(r.lo) else _p(r.p),
             f"{r.direction} collapses than the reference" if r.direction else "not shown"] for r in d.collapse]
    return [Para(f"Collapse (declared before the first look): a seed whose {a.metric} ends on the wrong side of "
                 f"{d.design.collapse_below:g} collapsed. Only a seed where exactly one arm collapsed says which "
                 f"collapses more; at alpha {d.design.collapse_alpha:g} over the comparisons a decision needs at "
                 "least the discordant seeds shown, all one way (no valid test decides on fewer)."),
            Table(["condition", "collapsed", f"{a.reference} collapsed", "discordant: only reference / only this",
                   "discordant seeds a decision needs", "interval (P fewer) or p", "decision"], rows)]


def seed_blocks(a: Answer) -> list:
    """The per-seed differences a paired comparison rests on: each condition minus the reference,
    seed by seed (a seed the reference did not run shows '-')."""
    if not a.values or len(a.values) < 2:
        return []
    ref = a.values[a.reference]
    others = [c.condition for c in a.comparisons]
    seeds = sorted(set().union(*(set(v) for v in a.values.values())))
    rows = [[f"{s[0]} seed={s[1]}" if isinstance(s, tuple) else str(s), f"{100 * ref[s]:.1f}" if s in ref else "-",
             *(f"{100 * (a.values[c][s] - ref[s]):+.1f}" if s in ref and s in a.values[c] else "-" for c in others)]
            for s in seeds]
    return [Table(["seed", f"{a.reference} (reference)", *(f"{c} minus reference" for c in others)], rows)]


def aggregate_blocks(a: Answer, svgs: dict[str, str]) -> list:
    """IQM with bootstrap intervals, probability of improvement, performance profiles."""
    from ttt_lab.stats.aggregates import aggregates, profile

    if not a.values:
        return []
    def span(lo: float, hi: float, scale: float = 1.0, fmt: str = ".2f") -> str:
        return "" if not math.isfinite(lo) else f" [{scale * lo:{fmt}}, {scale * hi:{fmt}}]"

    rows = [[g.condition, str(g.seeds), f"{100 * g.iqm:.1f}{span(g.iqm_lo, g.iqm_hi, 100, '.1f')}",
             "reference" if g.condition == a.reference else
             f"{g.improvement:.2f}" + span(g.improvement_lo, g.improvement_hi)]
            for g in aggregates(a.values, a.reference, maximize=a.direction == "maximize")]
    svg = figures.band_chart(f"performance profile: share of runs above a score of {a.metric}", profile(a.values),
                             "score threshold")
    svgs["performance_profile.svg"] = svg
    return [Table(["condition", "seeds", "IQM over seeds [95 % bootstrap]", f"P(better than {a.reference})"], rows),
            Figures([("Performance profiles (Agarwal et al. 2021)", svg, "performance_profile.svg")]),
            Para("Interquartile mean over seeds with a percentile bootstrap 95 % interval (scipy; seed by seed where "
                 "the arms share seeds; no interval below 5 seeds, where the bootstrap covers far less than it "
                 "says), and the probability that a run of the condition scores better than the reference's on the "
                 f"same seed ({'higher' if a.direction == 'maximize' else 'lower'} is better; ties half; Agarwal "
                 "et al., NeurIPS 2021).", "note")]


def _p(p: float) -> str:
    return "-" if not math.isfinite(p) else f"{p:.3g}"


def verdict_json(a: Answer) -> str:
    return json.dumps(a.as_dict(), indent=2, sort_keys=False) + "\n"


def results_csv(study: Study) -> str:
    """One row per trial: overrides, seed, final metrics, config hash, run id."""
    names = sorted({m for t in study.trials for m in t.metrics if m.startswith(("eval/", "audit/"))} | set(
        FINAL_METRICS))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["trial", "condition", "seed", "overrides", "status", "config_hash", "run_id", *names])
    for t in study.trials:
        w.writerow([t.number, t.condition, t.seed, " ".join(t.overrides), t.state, t.tags.get(keys.CONFIG_HASH, ""),
                    t.run_id, *(t.metrics.get(m, "") for m in names)])
    return buf.getvalue()
