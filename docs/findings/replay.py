"""A study's answer re-decided from its `results.csv` and its study file, without its tracking
store: the same decisions a live report makes (`ttt_lab.report.decisions.answer`), for a study
whose runs are gone or that a newer rule should decide again. A replay of finished trials under a
new rule is a replay, not a rerun: the study file's procedure must be one that is valid for looks
not declared in advance (`anytime`), or a fixed design replayed at the looks its file declared
before its first trial. The tool of `redecide.py`, kept beside it (users of the
package never run it)."""

from __future__ import annotations

import csv
from pathlib import Path

from ttt_lab.report.collect import Study, Trial
from ttt_lab.report.decisions import Answer, answer
from ttt_lab.studies.spec import StudyError, StudySpec
from ttt_lab.tracking import keys


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def study_from_csv(results: Path, spec: StudySpec) -> Study:
    trials = []
    with results.open() as f:
        for row in csv.DictReader(f):
            metrics = {k: v for k, v in ((k, _number(x)) for k, x in row.items() if k.startswith(("eval/", "audit/")))
                       if v is not None}
            state = row["status"]
            trials.append(Trial(row["run_id"], int(row["trial"]), "FINISHED" if state == "COMPLETE" else "FAILED",
                                state, row["overrides"].split(), row["condition"], int(row["seed"] or 0), 0,
                                metrics, {keys.CONFIG_HASH: row["config_hash"]}))
    from ttt_lab.studies.parent_run import study_tags

    tags = study_tags(spec)
    if spec.decisions == "fixed" and spec.looks:
        seeds = len({t.seed for t in trials if t.state == "COMPLETE"})
        looks = ",".join(str(n) for n in spec.looks if n <= seeds)
        tags |= {keys.DECLARED_LOOKS: ",".join(map(str, spec.looks)), keys.LOOKS: looks}
    return Study(spec.name, "", tags, 0, trials)


def replay(results: Path, spec: StudySpec) -> Answer:
    """The answer the study file's rules give the trials in `results` (anytime, or fixed at the looks
    its file declared)."""
    if spec.decisions != "anytime" and not spec.looks:
        raise StudyError(f"'{spec.name}' declares fixed decisions, whose looks must be declared before the first "
                         "trial; finished trials can only be re-decided by a procedure valid at any seed count. "
                         "Replay it with decisions: anytime.")
    return answer(study_from_csv(results, spec))
