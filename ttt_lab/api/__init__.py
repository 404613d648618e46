"""ttt-lab's Python API: what the CLI's commands do, returning data instead of printing it. Every
command is a thin body over one of these functions.

    from ttt_lab import api

    cfg = api.load_config(["experiment=smoke"])
    result = api.train(cfg)                      # TrainResult: checkpoint, run id, final rates
    print(result.metrics["final/optimal/draw_rate"])
    table = api.export("quickstart").frame()     # one row per trial, a pandas DataFrame

Every function runs without a terminal: progress lines go to the `ttt_lab` logger and tables,
finished trials and progress to `ttt_lab.events` (plain lines on that logger unless a front end is
installed), printed only where the caller configures `logging`
(`logging.basicConfig(level=logging.INFO)`); each function raises `ttt_lab.errors.TttLabError`
(one paragraph naming the problem and the fix) for bad input. Heavy libraries (torch, TRL,
MLflow, Optuna) are imported by the function that needs them."""

from __future__ import annotations

from ttt_lab.api._config import (
    ConfigDiff,
    ConfigLike,
    add_config_dirs,
    config_diff,
    config_groups,
    config_keys,
    load_config,
)
from ttt_lab.api._evaluate import AuditKind, AuditResult, EvalResult, audit, evaluate
from ttt_lab.api._play import Game, game
from ttt_lab.api._report import Export, ExportFormat, ReportResult, TrialRow, export, report
from ttt_lab.api._runs import RunRow, Runs, Synced, reproduce, runs, sync_runs
from ttt_lab.api._serve import Server, UiError, ui_server
from ttt_lab.api._studies import NamedStudyPlace, SweepResult, named_studies, sweep, sweep_status
from ttt_lab.api._train import TrainResult, in_processes, train
from ttt_lab.config.load import Loaded, using_config_dirs
from ttt_lab.errors import TttLabError
from ttt_lab.studies.options import SweepOptions

__all__ = [
    "AuditKind", "AuditResult", "ConfigDiff", "ConfigLike", "EvalResult", "Export", "ExportFormat", "Game", "Loaded",
    "NamedStudyPlace", "ReportResult", "RunRow", "Runs", "Server", "SweepOptions", "SweepResult", "Synced",
    "TrainResult", "TrialRow", "TttLabError", "UiError", "add_config_dirs", "audit", "config_diff", "config_groups",
    "config_keys", "evaluate", "export", "game", "in_processes", "load_config", "named_studies", "report", "reproduce",
    "runs", "sweep", "sweep_status", "sync_runs", "train", "ui_server", "using_config_dirs",
]
