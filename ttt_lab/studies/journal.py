"""Optuna's journal storage (one append-only file on a shared file system) with the heartbeats
ttt-lab's recovery relies on: Optuna gives heartbeats to its RDB storage only, so a journal
trial records its last beat as a system attribute, and a RUNNING trial whose last beat (or start)
is older than the grace period is stale, exactly Optuna's rule for RDBStorage.

The journal file itself is guarded by Optuna's own lock (a symlink beside it, which works on
NFS); the study's mutex (`studies.mutex`) is a flock on `<file>.mutex` beside it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optuna.storages import JournalStorage
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from ttt_lab.studies.spec import StudyError

BEAT = "ttt_lab:heartbeat"
"""The system attribute holding a trial's last heartbeat (seconds since the epoch)."""


class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
    def __init__(self, backend: JournalFileBackend, interval_s: int, grace_s: int) -> None:
        super().__init__(backend)
        self._interval_s, self._grace_s = interval_s, grace_s

    def record_heartbeat(self, trial_id: int) -> None:
        self.set_trial_system_attr(trial_id, BEAT, time.time())

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        now = time.time()
        stale = []
        for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            last = t.system_attrs.get(BEAT)
            if last is None and t.datetime_start is not None:
                last = t.datetime_start.timestamp()
            if last is not None and now - float(last) > self._grace_s:
                stale.append(t._trial_id)
        return stale

    def get_heartbeat_interval(self) -> int | None:
        return self._interval_s

    def get_heartbeat_stale_trial_callback(self) -> Callable[..., Any] | None:
        return None


def open_journal(path: Path, interval_s: int, grace_s: int) -> HeartbeatJournalStorage:
    """The journal at `path` (created with its folder when new)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return HeartbeatJournalStorage(JournalFileBackend(str(path)), interval_s, grace_s)
    except OSError as e:
        raise StudyError(f"cannot open the journal storage {path} ({e.strerror or e}). Give a file in a writable "
                         "folder that every worker mounts: --storage journal:///shared/path/study.log.") from None
