"""The names of every tag ttt-lab writes on an MLflow run, in one place: the writers
(training, evaluation, audits, studies) and the readers (reports, reproduce) use these."""

from __future__ import annotations

# provenance: on every run
KIND = "ttt.kind"
"""train | eval | audit | trial | sweep"""
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
SPENT = "ttt.error_spent"
"""fixed: the error rate spent by each look taken, cumulative (comma-separated)."""
