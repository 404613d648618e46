"""The schema's `study:` section: how `ttt-lab sweep` lays out a command-line grid (part of
`config.schema`, kept apart to stay readable). Not part of any trial's identity (excluded from
the hash): it decides which trials a sweep plans, not what one trial computes."""

from __future__ import annotations

from dataclasses import dataclass

from ttt_lab.errors import InvalidSetting


@dataclass
class StudyConfig:
    seeds: int | None = None
    """Seeds a command-line grid that names none runs in every condition (its first value then the
    baseline); null: as many as a comparison whose seeds all agree needs to decide; 1: one seed,
    nothing compared over seeds."""


def validate_study(s: StudyConfig) -> None:
    if s.seeds is not None and (isinstance(s.seeds, bool) or not isinstance(s.seeds, int) or s.seeds < 1):
        raise InvalidSetting("study.seeds", s.seeds, "a whole number of seeds of at least 1, or null (as many as "
                             "a comparison whose seeds all agree needs to decide)")
