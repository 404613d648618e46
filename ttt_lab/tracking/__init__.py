"""The one place that talks to MLflow (import `ttt_lab.tracking.store` lazily: it loads mlflow)."""
