"""The names of every tag ttt-lab writes on an MLflow run, in one place: the writers
(training, evaluation, audits, studies) and the readers (reports, reproduce) use these."""

from __future__ import annotations

# provenance: on every run
KIND = "ttt.kind"
"""train | eval | audit | trial | sweep | condition"""
CONFIG_HASH = "ttt.config_hash"
SEED = "ttt.seed"
COMMAND = "ttt.command"
OVERRIDES = "ttt.overrides"
GIT_COMMIT = "mlflow.source.git.commit"
GIT_DIRTY = "ttt.git_dirty"
VERSION_PREFIX = "ttt.version."
"""One tag per package: ttt.version.<package>."""
PARENT_RUN = "mlflow.parentRunId"

# training
CHECKPOINT = "ttt.checkpoint"
TORCH_THREADS = "ttt.torch_threads"
KERNEL_PATH = "ttt.kernel_path"
"""JSON: the CPU kernels a training ran on (torch's capability, bf16/AMX, threads, kernel caps)."""
RESUMED = "ttt.resumed"
ERROR = "ttt.error"

# evaluation and audits
PLAYER = "ttt.player"
SUITE = "ttt.suite"
AUDIT = "ttt.audit"
AUDIT_STATUS = "ttt.audit.status"
POLICY_AUDIT = "ttt.policy_audit"
"""On a study trial's run: the status of the policy audit of its final checkpoint."""

# studies: the parent run
STUDY = "ttt.study"
STUDY_KIND = "ttt.study_kind"
STUDY_SOURCE = "ttt.study_source"
QUESTION = "ttt.question"
OBJECTIVES = "ttt.objectives"
PARAMS = "ttt.params"
BASELINE = "ttt.baseline"
"""The condition a report compares the others with (empty: the best)."""
TRIALS_COMPLETE = "ttt.trials_complete"
TRIALS_FAILED = "ttt.trials_failed"
TRIALS_PRUNED = "ttt.trials_pruned"

# studies: a trial's child run
TRIAL = "ttt.trial"
TRIAL_OVERRIDES = "ttt.trial_overrides"
WORKER = "ttt.worker"
OPTUNA_STATE = "optuna.state"
OPTUNA_TRIAL_NUMBER = "optuna.trial_number"
PRUNED = "pruned"
PRUNED_AT = "ttt.pruned_at"
MARGIN = "ttt.margin"
LOOKS = "ttt.looks"
"""The seeds per condition at each look of `--until-settled` (comma-separated)."""
MAX_SEEDS = "ttt.max_seeds"
PROCEDURE = "ttt.decisions"
"""anytime | fixed: how the study's comparisons are decided."""
DECLARED_LOOKS = "ttt.declared_looks"
"""fixed: the looks declared before the first trial (comma-separated seeds per condition)."""
BOUNDS = "ttt.bounds"
"""The objective's range, low,high."""
COLLAPSE_BELOW = "ttt.collapse_below"
"""The declared collapse threshold of the study's objective (absent: no collapse endpoint)."""
COLLAPSE_ALPHA = "ttt.collapse_alpha"
MEAN_ALPHA = "ttt.mean_alpha"
"""The mean difference's share of the study's alpha (the probability of improvement keeps the rest)."""
DELTA = "ttt.delta"
"""The probability of improvement's equivalence margin (absent or 0: no equivalence decision)."""
BLOCKS = "ttt.blocks"
"""The study's block keys, as JSON (absent: no blocks)."""
SPENT = "ttt.error_spent"
"""fixed: the error rate spent by each look taken, cumulative (comma-separated)."""

# studies: the answer where MLflow users look (`ttt_lab.tracking.answer`)
NOTE = "mlflow.note.content"
"""A run's description, rendered as Markdown by the UI: on a study's parent run, its answer."""
ANSWER_PREFIX = "ttt.answer."
"""On the parent run, one tag per comparison: ttt.answer.<condition> = its decision, endpoint and
interval (the condition spelled as MLflow keys allow, `tracking.answer.key_part`)."""
CONDITION_KIND = "condition"
"""The `ttt.kind` of a study's run per condition, nested under its parent run: the condition's
aggregates as metrics, so that MLflow's compare view puts conditions side by side."""
CONDITION = "ttt.condition"
DECISION = "ttt.decision"
"""On a condition's run: its comparison's decision (`reference` for the reference)."""
AGGREGATE_PREFIX = "aggregate/"
"""A condition run's metrics: aggregate/seeds, mean, iqm, iqm_lo, iqm_hi, probability_of_improvement
(and _lo, _hi), collapse_rate."""

# experiments
EXPERIMENT_KIND = "mlflow.experimentKind"
"""An experiment tag (MLflow 3.x): the view the UI opens it in."""
MODEL_TRAINING = "custom_model_development"
"""That tag's value for model training (the UI's "Machine learning"; else it may open the GenAI view)."""
