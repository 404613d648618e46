"""Studies: grid sweeps and Optuna searches over Hydra overrides, run by worker processes,
tracked as one MLflow parent run with a child run per trial, resumable by config hash."""
