"""Studies: grid sweeps and Optuna searches over Hydra overrides, run by worker processes,
tracked as one MLflow parent run with a child run per trial, resumable by config hash; and
`reproduce`, which re-trains a logged run. The only package that imports Optuna."""
