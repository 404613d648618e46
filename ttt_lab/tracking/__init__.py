"""The one place that talks to MLflow: `store` (loads mlflow; import it lazily), `runs`
(a run of any kind with its common tags), `keys` (every tag name), `provenance`, `background`."""
