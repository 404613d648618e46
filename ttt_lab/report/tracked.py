"""The study's answer on its MLflow parent run, in the report's own words: the note is the answer
sentences and the decision table of `ttt_lab.report.decisions` (the same functions the report's
Answer section calls), one tag per comparison, and each condition's aggregates on a run of its
own under the parent (`ttt_lab.tracking.answer` writes them). Written at every look of
`--until-settled` (`publish`, handed down to the look by the API) and by `ttt-lab report`
(`record`, with the report's own Answer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ttt_lab.formats import points
from ttt_lab.pages import Heading, Para, render_blocks
from ttt_lab.report.decisions import Answer, answer, decision_table, sentences
from ttt_lab.stats.decide import Comparison

if TYPE_CHECKING:
    from ttt_lab.tracking.answer import ConditionAnswer
    from ttt_lab.tracking.store import Store

AGGREGATES = ("seeds", "mean", "iqm", "iqm_lo", "iqm_hi", "probability_of_improvement",
              "probability_of_improvement_lo", "probability_of_improvement_hi", "collapse_rate")
"""A condition run's metrics, each under `aggregate/`."""


def note(a: Answer) -> str:
    """The parent run's description (Markdown): the answer sentences, then the decision table."""
    blocks: list = [Heading("Answer"), *(Para(s) for s in sentences(a))]
    if a.comparisons:
        blocks.append(decision_table(a))
    blocks.append(Para(f"Written by ttt-lab at every look of `--until-settled` and by `ttt-lab report {a.study}` "
                       "(the full report: figures, seed by seed, collapse, audits). Each condition's aggregates "
                       "(seeds, mean, IQM and probability of improvement with their bootstrap intervals) are the "
                       "metrics of its run under this one: select them and Compare.", "note"))
    return render_blocks(blocks, markdown=True).strip() + "\n"


def comparison_tag(c: Comparison) -> str:
    """A comparison's tag: its decision, the endpoint and its interval, then the mean difference."""
    return (f"{c.decision} | probability of improvement {c.improvement:.2f} [{c.improvement_lo:.2f}, "
            f"{c.improvement_hi:.2f}] against {c.reference} on {c.seeds} seeds | mean difference "
            f"{points(c.difference)} points [{points(c.lo)}, {points(c.hi)}]: {c.mean_decision}")


def condition_answers(a: Answer) -> list[ConditionAnswer]:
    """Each condition's aggregates (`Answer.as_dict`'s, as verdict.json has them) and its decision."""
    from ttt_lab.tracking.answer import ConditionAnswer

    decided = {c.condition: c.decision for c in a.comparisons}
    collapse: dict[str, float] = {}
    for r in a.decisions.collapse if a.decisions else []:
        collapse |= {r.condition: r.rate, r.reference: r.reference_rate}
    out = []
    for cond, agg in a.as_dict()["conditions"].items():
        iqm = agg.get("iqm_interval") or [None, None]
        poi = agg.get("probability_of_improvement_interval") or [None, None]
        values = {"seeds": agg["seeds"], "mean": agg["mean"], "iqm": agg.get("iqm"), "iqm_lo": iqm[0],
                  "iqm_hi": iqm[1], "probability_of_improvement": agg.get("probability_of_improvement"),
                  "probability_of_improvement_lo": poi[0], "probability_of_improvement_hi": poi[1],
                  "collapse_rate": collapse.get(cond)}
        out.append(ConditionAnswer(cond, {k: float(v) for k, v in values.items() if v is not None},
                                   "reference" if cond == a.reference else decided.get(cond, "-")))
    return out


def record(store: Store, parent_run_id: str, a: Answer) -> dict[str, str]:
    """Write the answer on the parent run and its conditions' runs; condition -> its run id."""
    from ttt_lab.tracking.answer import write_answer

    return write_answer(store, parent_run_id=parent_run_id, note=note(a),
                        comparisons={c.condition: comparison_tag(c) for c in a.comparisons},
                        conditions=condition_answers(a), step=max((n for _, n in a.means.values()), default=0))


def publish(store: Store, parent_run_id: str) -> None:
    """A look's answer, read back from the store as `ttt-lab report` reads it, on the parent run."""
    from ttt_lab.report.collect import collect

    study = collect(store, parent_run_id, with_curves=False)
    record(store, study.parent_id, answer(study))
