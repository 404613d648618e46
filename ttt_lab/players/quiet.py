"""transformers without its progress bars and warnings: ttt-lab draws its own progress."""

from __future__ import annotations

import os


def quiet_transformers() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
