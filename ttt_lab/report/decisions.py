"""The study's answer as decisions: each condition against the reference on the objective —
differs, equivalent or unresolved (`ttt_lab.studies.decision`) — as a section that leads the
report, a forest plot, and as data: `verdict.json` and `results.csv`."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from statistics import fmean

from ttt_lab.formats import points
from ttt_lab.pages import Figures, Para, Table
from ttt_lab.report import figures
from ttt_lab.report.collect import FINAL_METRICS, Study, spec_of
from ttt_lab.studies.decision import ALPHA, DIFFERS, EQUIVALENT, UNRESOLVED, Comparison, decide
from ttt_lab.studies.spec import DEFAULT_MARGIN
from ttt_lab.tracking import keys


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
    """The reference is the study's declared baseline (else the best condition)."""
    study: str = "STUDY"
    values: dict[str, dict[int, float]] | None = None
    """condition -> seed -> objective."""

    def as_dict(self) -> dict:
        return {"metric": self.metric, "direction": self.direction, "reference": self.reference,
                "margin": self.margin, "alpha": ALPHA, "looks": self.looks, "max_seeds": self.max_seeds,
                "method": "paired t over shared seeds (Welch otherwise), TOST within ±margin, Holm across "
                          "comparisons, Pocock-type Lan-DeMets alpha spending across looks",
                "conditions": self._conditions(),
                "comparisons": [c.as_dict() for c in self.comparisons]}


    def _conditions(self) -> dict[str, dict]:
        from ttt_lab.report.aggregates import aggregates

        out = {c: {"mean": m, "seeds": n} for c, (m, n) in self.means.items()}
        for g in aggregates(self.values or {}, self.reference):
            out[g.condition] |= {"iqm": g.iqm, "iqm_interval": [g.iqm_lo, g.iqm_hi],
                                 "probability_of_improvement": None if math.isnan(g.improvement) else g.improvement,
                                 "probability_of_improvement_interval": None if math.isnan(g.improvement) else
                                 [g.improvement_lo, g.improvement_hi]}
        return out


def _float(text: str | None, default: float) -> float:
    try:
        return float(text) if text else default
    except ValueError:
        return default


def answer(study: Study) -> Answer:
    objs = spec_of(study).get(keys.OBJECTIVES) or [{"metric": "eval/optimal/draw_rate", "direction": "maximize"}]
    metric, direction = objs[0]["metric"], objs[0].get("direction", "maximize")
    by_cond = {c: {t.seed: t.metrics[metric] for t in ts if metric in t.metrics}
               for c, ts in study.conditions().items()}
    by_cond = {c: v for c, v in by_cond.items() if v}
    means = {c: (fmean(v.values()), len(v)) for c, v in by_cond.items()}
    margin = _float(study.tags.get(keys.MARGIN), DEFAULT_MARGIN)
    looks = [int(x) for x in study.tags.get(keys.LOOKS, "").split(",") if x.strip().isdigit()]
    max_seeds = int(_float(study.tags.get(keys.MAX_SEEDS), 0)) or None
    if not means:
        return Answer(metric, direction, "-", margin, looks, max_seeds, {}, [])
    baseline = study.tags.get(keys.BASELINE, "")
    sign = 1 if direction == "maximize" else -1
    reference = baseline if baseline in means else max(means, key=lambda c: sign * means[c][0])
    comps = decide(by_cond, reference, metric=metric, margin=margin, looks=looks or None, max_seeds=max_seeds)
    return Answer(metric, direction, reference, margin, looks, max_seeds, means, comps,
                  declared=reference == baseline, values=by_cond, study=study.name)


def sentences(a: Answer) -> list[str]:
    if len(a.means) < 2:
        return [f"Only one condition ({a.reference}) finished: nothing to compare."]
    kind = "the declared baseline" if a.declared else "the best"
    out = [f"Each condition against {kind} ({a.reference}, {100 * a.means[a.reference][0]:.1f} on {a.metric}); "
           f"a difference smaller than ±{100 * a.margin:g} points does not matter (the study's margin)."]
    for c in a.comparisons:
        span = f"{points(c.difference)} points [{points(c.lo)}, {points(c.hi)}]"
        if c.decision == DIFFERS:
            out.append(f"{c.condition} differs: {span}.")
        elif c.decision == EQUIVALENT:
            out.append(f"{c.condition} is equivalent (within ±{100 * a.margin:g}): {span}.")
        elif c.seeds < 2:
            out.append(f"{c.condition} is unresolved: with {c.seeds or 'no'} seed{'s' * (c.seeds != 1)} shared "
                       "with the reference there is no spread to compare against; give the study seeds "
                       "(seed=0,1,2) to decide it.")
        else:
            need = f"about {c.seeds_needed} seeds per condition would settle it" if c.seeds_needed else \
                "more seeds are needed to settle it"
            out.append(f"{c.condition} is unresolved after {c.seeds} seeds: {span}; {need}.")
    if any(c.decision == UNRESOLVED for c in a.comparisons):
        need = max((c.seeds_needed or 0) for c in a.comparisons)
        budget = f" --max-seeds {need}" if need else ""
        out.append(f"To settle it: `ttt-lab sweep {a.study} --until-settled{budget}` adds seeds to every condition "
                   "until each comparison is settled, reusing every finished trial.")
    return out


def section_blocks(a: Answer, svgs: dict[str, str]) -> list:
    blocks: list = [Para(s) for s in sentences(a)]
    if a.comparisons:
        svg = figures.forest_plot(f"{a.metric}: each condition minus {a.reference}",
                                  [(c.condition, c.difference, c.lo, c.hi, c.decision) for c in a.comparisons],
                                  a.margin)
        svgs["decisions.svg"] = svg
        blocks.append(Figures([("Decisions: difference and interval per comparison", svg, "decisions.svg")]))
        rows = [[c.condition, f"{points(c.difference)}", f"[{points(c.lo)}, {points(c.hi)}]", c.decision,
                 "paired" if c.paired else "unpaired", str(c.seeds), _p(c.p_holm),
                 str(c.seeds_needed or "-") if c.decision == UNRESOLVED else "-"]
                for c in a.comparisons]
        blocks.append(Table(["condition", "difference (points)", "interval", "decision", "design", "seeds",
                             "p (Holm)", "seeds to settle"], rows))
    blocks += seed_blocks(a)
    blocks += aggregate_blocks(a, svgs)
    looks = ", ".join(map(str, a.looks)) if a.looks else "one"
    blocks.append(Para(f"Decisions: differs when the interval excludes 0, equivalent when the two one-sided tests' "
                       f"interval lies inside ±margin ({a.margin:g}); paired t over the seeds both conditions ran "
                       f"(Welch where they differ), Holm across comparisons, error rate {ALPHA:g} spent over the "
                       f"looks ({looks}; Lan-DeMets Pocock-type spending). verdict.json and results.csv beside "
                       "this page hold the same answer as data.", "note"))
    return blocks


def seed_blocks(a: Answer) -> list:
    """The per-seed differences a paired comparison rests on: each condition minus the reference,
    seed by seed (a seed the reference did not run shows '-')."""
    if not a.values or len(a.values) < 2:
        return []
    ref = a.values[a.reference]
    others = [c.condition for c in a.comparisons]
    seeds = sorted(set().union(*(set(v) for v in a.values.values())))
    rows = [[str(s), f"{100 * ref[s]:.1f}" if s in ref else "-",
             *(f"{100 * (a.values[c][s] - ref[s]):+.1f}" if s in ref and s in a.values[c] else "-" for c in others)]
            for s in seeds]
    return [Table(["seed", f"{a.reference} (reference)", *(f"{c} minus reference" for c in others)], rows)]


def aggregate_blocks(a: Answer, svgs: dict[str, str]) -> list:
    """IQM with bootstrap intervals, probability of improvement, performance profiles."""
    from ttt_lab.report.aggregates import aggregates, profile

    if not a.values:
        return []
    rows = [[g.condition, str(g.seeds), f"{100 * g.iqm:.1f} [{100 * g.iqm_lo:.1f}, {100 * g.iqm_hi:.1f}]",
             "reference" if g.condition == a.reference else
             f"{g.improvement:.2f} [{g.improvement_lo:.2f}, {g.improvement_hi:.2f}]"]
            for g in aggregates(a.values, a.reference)]
    svg = figures.band_chart(f"performance profile: share of runs above a score of {a.metric}", profile(a.values),
                             "score threshold")
    svgs["performance_profile.svg"] = svg
    return [Table(["condition", "seeds", "IQM over seeds [95 % bootstrap]", f"P(better than {a.reference})"], rows),
            Figures([("Performance profiles (Agarwal et al. 2021)", svg, "performance_profile.svg")]),
            Para("Interquartile mean over seeds with a percentile bootstrap 95 % interval (scipy), and the "
                 "probability that a run of the condition scores above a run of the reference (ties half), with "
                 "its bootstrap interval (Agarwal et al., NeurIPS 2021).", "note")]


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
