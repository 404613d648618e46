"""The study's answer as decisions: each condition against the reference on the objective —
differs, differs within the margin, equivalent or unresolved (`ttt_lab.stats.decide`) — as a section
that leads the report, a forest plot, and as data: `verdict.json` and `results.csv`."""

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
from ttt_lab.stats.decide import DIFFERS, EQUIVALENT, UNRESOLVED, WITHIN, Comparison, Decisions, decide
from ttt_lab.stats.design import ANYTIME, FIXED, Design, default_bounds
from ttt_lab.studies.spec import DEFAULT_MARGIN
from ttt_lab.tracking import keys

METHOD = {ANYTIME: "betting confidence sequence (Waudby-Smith & Ramdas 2024) on the per-seed differences, valid "
                   "at every seed count; Bonferroni across the family of comparisons",
          FIXED: "exact sign-flip permutation test at the declared looks (Holm step-down within a look, "
                 "Pocock-type spending across looks) for the direction; the betting confidence sequence for "
                 "the magnitude"}


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
                "alpha": design.alpha, "procedure": design.procedure, "looks": self.looks,
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
    return Design(procedure, margin, bounds, looks, **collapse)


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
    result = decide(by_cond, reference=reference, declared=reference == baseline, metric=metric, design=design,
                    looks=looks)
    per = {b: decide(v, reference=reference, declared=reference == baseline, metric=metric, design=design,
                     looks=looks).comparisons for b, v in per_block.items() if reference in v}
    from ttt_lab.stats.projection import project

    project(result, max_seeds or max(n for _, n in means.values()), max(1, min(n for _, n in means.values())))
    return Answer(metric, direction, reference, margin, looks, max_seeds, means, result.comparisons,
                  declared=reference == baseline, values=by_cond, study=study.name, decisions=result,
                  per_block=per or None)


def _span(c: Comparison) -> str:
    return f"{points(c.difference)} points [{points(c.lo)}, {points(c.hi)}]"


def sentences(a: Answer) -> list[str]:
    if len(a.means) < 2:
        return [f"Only one condition ({a.reference}) finished: nothing to compare."]
    if a.problem:
        return [f"Nothing decided: {a.problem}"]
    kind = "the declared baseline" if a.declared else "the best, corrected for choosing it (every pair compared):"
    out = [f"Each condition against {kind} {a.reference} ({100 * a.means[a.reference][0]:.1f} on {a.metric}); "
           f"a difference smaller than ±{100 * a.margin:g} points does not matter (the study's margin)."]
    for c in a.comparisons:
        if c.decision == DIFFERS:
            out.append(f"{c.condition} differs: {c.direction} by more than the margin, {_span(c)}.")
        elif c.decision == WITHIN:
            out.append(f"{c.condition} differs, within the margin: {c.direction}, but by less than ±"
                       f"{100 * a.margin:g} points, {_span(c)}.")
        elif c.decision == EQUIVALENT:
            out.append(f"{c.condition} is equivalent (within ±{100 * a.margin:g}): {_span(c)}.")
        elif c.seeds < 2:
            out.append(f"{c.condition} is unresolved: with {c.seeds or 'no'} seed{'s' * (c.seeds != 1)} compared "
                       "with the reference there is no spread to judge it by; give the study seeds (seed=0,1,2).")
        else:
            known = f" It is {c.direction}, by an amount not yet known to matter." if c.direction else ""
            chance = f" Projected chance of a decision: {_chances(c)}." if c.settle else ""
            out.append(f"{c.condition} is unresolved after {c.seeds} seeds: {_span(c)}.{known}{chance}")
    for block, comps in (a.per_block or {}).items():
        out.append(f"Within {block} alone: " + "; ".join(f"{c.condition} {c.decision}, {_span(c)}" for c in comps)
                   + ".")
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
        svg = figures.forest_plot(f"{a.metric}: each condition minus {a.reference}",
                                  [(c.condition, c.difference, c.lo, c.hi, c.decision) for c in a.comparisons],
                                  a.margin)
        svgs["decisions.svg"] = svg
        blocks.append(Figures([("Decisions: difference and interval per comparison", svg, "decisions.svg")]))
        rows = [[c.condition, f"{points(c.difference)}", f"[{points(c.lo)}, {points(c.hi)}]", c.decision,
                 c.direction or "-", "paired" if c.paired else "unpaired", str(c.seeds), _p(c.p_holm),
                 _chances(c) if c.decision == UNRESOLVED else "-"]
                for c in a.comparisons]
        blocks.append(Table(["condition", "difference (points)", "interval", "decision", "direction", "design",
                             "seeds", "p (Holm)", "chance to settle"], rows))
    blocks += collapse_blocks(a)
    blocks += seed_blocks(a)
    blocks += aggregate_blocks(a, svgs)
    if a.decisions:
        d = a.decisions
        spent = (f"error spent by the looks taken ({', '.join(map(str, d.looks))} of "
                 f"{', '.join(map(str, d.design.looks))}): {', '.join(f'{x:.4f}' for x in d.spent)}"
                 if d.design.procedure == FIXED else "valid after every seed, whatever the budget")
        blocks.append(Para(f"Decisions ({d.design.procedure}, alpha {d.design.alpha:g} over {d.family} "
                           f"comparison(s)): {METHOD[d.design.procedure]}; {spent}. The interval is the confidence "
                           f"sequence's for the mean difference, the objective bounded by {list(d.design.bounds)}. "
                           "verdict.json and results.csv beside this page hold the same answer as data.", "note"))
    return blocks


def collapse_blocks(a: Answer) -> list:
    """The declared collapse endpoint: each arm's collapse rate beside the reference's."""
    d = a.decisions
    if not d or not d.collapse:
        return []
    rows = [[r.condition, f"{r.collapsed} of {r.seeds} ({100 * r.rate:.0f} %)",
             f"{r.reference_collapsed} of {r.reference_seeds} ({100 * r.reference_rate:.0f} %)",
             f"[{points(r.lo)}, {points(r.hi)}]" if math.isfinite(r.lo) else _p(r.p), r.test,
             f"{r.direction} collapses than the reference" if r.direction else "not shown"] for r in d.collapse]
    return [Para(f"Collapse (declared before the first trial): a seed whose {a.metric} ends below "
                 f"{d.design.collapse_below:g} collapsed; compared at alpha {d.design.collapse_alpha:g} over the "
                 "comparisons."),
            Table(["condition", "collapsed", f"{a.reference} collapsed", "interval (points) or p", "test",
                   "decision"], rows)]


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
