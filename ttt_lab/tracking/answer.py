"""A study's answer where MLflow users look (the report layer writes the words and numbers; this
puts them in the store):

- the parent run's description (`mlflow.note.content`, rendered as Markdown by the UI) holds the
  answer sentences and the decision table;
- one tag per comparison on the parent run, `ttt.answer.<condition>`: decision, endpoint, interval;
- a run per condition, nested under the parent run (`ttt.kind` = condition, named after the
  condition), with the condition's aggregates as metrics under the same keys (`aggregate/iqm`, …).
  MLflow's compare view and chart view line runs up against the same metric key (a row per key, a
  column or bar per run): metrics on the parent prefixed by the condition would be one run's
  separate keys, never charted side by side;
- the study's experiment tagged as model training (`mlflow.experimentKind`), so the UI opens it
  in that view rather than the GenAI one.

Writing again (every look of `--until-settled`, every `ttt-lab report`) updates the same runs: a
metric's step is the seeds per condition at that look, so each one's history follows the looks."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mlflow.entities import Metric, RunTag

from ttt_lab.tracking import keys
from ttt_lab.tracking.store import MAX_ENTITY_KEY_LENGTH, MAX_PARAMS_TAGS_PER_BATCH, MAX_TAG_VAL_LENGTH, Store

CUT = "\n\n*(cut to MLflow's limit for a tag; `ttt-lab report` has the whole answer)*"


@dataclass(frozen=True)
class ConditionAnswer:
    condition: str
    metrics: Mapping[str, float]
    """Aggregate name (`iqm`, `iqm_lo`, …) -> value; a value that is not finite is left out."""
    decision: str
    """Its comparison's decision, or `reference`."""


def key_part(condition: str) -> str:
    """A condition as an MLflow key may hold it: letters, digits, `_ - .` and spaces are kept,
    anything else (`=`, `/`, parentheses) becomes `_`."""
    return re.sub(r"[^\w.\- ]", "_", condition).strip(" .") or "_"


def answer_key(condition: str) -> str:
    return (keys.ANSWER_PREFIX + key_part(condition))[:MAX_ENTITY_KEY_LENGTH]


def mark_training(store: Store, experiment_id: str) -> None:
    """Tag the experiment as model training (MLflow 3.x opens it in that view)."""
    store.client.set_experiment_tag(experiment_id, keys.EXPERIMENT_KIND, keys.MODEL_TRAINING)


def _fit(text: str) -> str:
    return text if len(text) <= MAX_TAG_VAL_LENGTH else text[: MAX_TAG_VAL_LENGTH - len(CUT)] + CUT


def _tags(run_id: str, tags: Mapping[str, str], store: Store) -> None:
    items = [RunTag(k, _fit(v)) for k, v in tags.items()]
    for i in range(0, len(items), MAX_PARAMS_TAGS_PER_BATCH):
        store.client.log_batch(run_id, tags=items[i : i + MAX_PARAMS_TAGS_PER_BATCH], synchronous=True)


def condition_runs(store: Store, experiment_id: str, parent_run_id: str) -> dict[str, str]:
    """condition -> the id of its run under the parent run (the latest, if several)."""
    found = store.client.search_runs(
        [experiment_id], f"tags.`{keys.PARENT_RUN}` = '{parent_run_id}' and tags.`{keys.KIND}` = "
                         f"'{keys.CONDITION_KIND}'", order_by=["attributes.start_time ASC"], max_results=5000)
    return {r.data.tags.get(keys.CONDITION, ""): r.info.run_id for r in found}


def _metrics(values: Mapping[str, float], step: int) -> list[Metric]:
    now = int(time.time() * 1000)
    return [Metric(keys.AGGREGATE_PREFIX + k, float(v), now, step) for k, v in values.items()
            if v is not None and math.isfinite(v)]


def write_answer(store: Store, *, parent_run_id: str, note: str, comparisons: Mapping[str, str],
                 conditions: Sequence[ConditionAnswer], step: int) -> dict[str, str]:
    """The answer on the study's parent run (`note`; `comparisons`: condition -> its tag's value)
    and one run per condition under it; condition -> its run id. The parent's status is kept."""
    parent = store.client.get_run(parent_run_id)
    experiment = parent.info.experiment_id
    mark_training(store, experiment)
    _tags(parent_run_id, {keys.NOTE: note} | {answer_key(c): v for c, v in comparisons.items()}, store)
    known = condition_runs(store, experiment, parent_run_id)
    study = parent.data.tags.get(keys.STUDY, "")
    out = {}
    for c in conditions:
        run_id = known.get(c.condition) or store.client.create_run(
            experiment, run_name=c.condition,
            tags={keys.KIND: keys.CONDITION_KIND, keys.CONDITION: c.condition, keys.STUDY: study,
                  keys.PARENT_RUN: parent_run_id}).info.run_id
        store.client.log_batch(run_id, metrics=_metrics(c.metrics, step),
                               tags=[RunTag(keys.DECISION, c.decision)], synchronous=True)
        store.client.set_terminated(run_id, "FINISHED")
        out[c.condition] = run_id
    return out


def answer_of(store: Store, parent_run_id: str) -> tuple[str, dict[str, str]]:
    """What a parent run says of its answer: (its note, its comparisons' tags by key)."""
    tags = store.client.get_run(parent_run_id).data.tags
    return tags.get(keys.NOTE, ""), {k: v for k, v in tags.items() if k.startswith(keys.ANSWER_PREFIX)}


def aggregates_of(store: Store, run_ids: Iterable[str]) -> dict[str, dict[str, float]]:
    """Each condition run's latest aggregates, by its condition."""
    out = {}
    for run_id in run_ids:
        run = store.client.get_run(run_id)
        out[run.data.tags.get(keys.CONDITION, run_id)] = {
            k.removeprefix(keys.AGGREGATE_PREFIX): v for k, v in run.data.metrics.items()
            if k.startswith(keys.AGGREGATE_PREFIX)}
    return out
