"""Bias audits: opponents, datasets and trained policies, as checks with thresholds."""
