"""Studies through the API: run one (on this machine or as launcher jobs), its status, the named ones."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ttt_lab.studies.options import SweepOptions

if TYPE_CHECKING:
    from ttt_lab.studies.command import Status


@dataclass(frozen=True)
class SweepResult:
    name: str
    parent_run_id: str | None
    """The study's MLflow parent run (None for a dry run, or jobs left to run on their own)."""
    finished: int
    failed: int
    pruned: int
    unfinished: int

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unfinished


def _args(study: str | os.PathLike[str] | None, overrides: Sequence[str]) -> list[str]:
    return [os.fspath(study), *overrides] if study is not None else list(overrides)


def _options(options: SweepOptions | None, changes: dict[str, Any]) -> SweepOptions:
    return dataclasses.replace(options or SweepOptions(), **changes)


def sweep(study: str | os.PathLike[str] | None = None, overrides: Sequence[str] = (),
          options: SweepOptions | None = None, **changes: Any) -> SweepResult:
    """Run a study (`ttt-lab sweep`): a named study (`"quickstart"`), a study file, or (study=None)
    a grid or search given by the overrides alone (`["batch_size=8,16", "experiment=smoke"]`; a
    first override naming a study counts as `study`). Re-running skips finished trials. `options`
    (a `SweepOptions`; keywords change single ones: `dry_run=True`) are the command's options:
    `launcher` (slurm | local | ray, with launcher.* overrides) submits the workers as jobs,
    `until_settled` adds seeds while a comparison is unresolved. Tables and finished trials are
    `ttt_lab.events`."""
    from ttt_lab.report.tracked import publish
    from ttt_lab.studies.command import run
    from ttt_lab.tracking.provenance import command_line

    out = run(_args(study, overrides), _options(options, changes), command_line(), publish=publish)
    return SweepResult(out.name, out.parent_run_id, out.finished, out.failed, out.pruned, out.unfinished)


def sweep_status(study: str | os.PathLike[str] | None = None, overrides: Sequence[str] = (),
                 options: SweepOptions | None = None, **changes: Any) -> Status:
    """A study's trials (a table), their count by state, and its launcher jobs (`ttt-lab sweep
    --status`); of `options`, those that name the study (`name`, `trials`) and where it ran
    (`storage`, `launcher`)."""
    from ttt_lab.studies.command import status

    return status(_args(study, overrides), _options(options, changes))


@dataclass(frozen=True)
class NamedStudyPlace:
    name: str
    origin: str
    """Where it was found: `./sweeps`, `config folder DIR` or `package` (the first one wins)."""
    path: Path
    question: str
    """The first line of its `question:`."""
    clash: bool
    """The name has different contents in several places."""
    first: bool
    """The place `ttt-lab sweep NAME` uses."""


def named_studies() -> list[NamedStudyPlace]:
    """Every named study, each place it is found in lookup order (`ttt-lab sweep --list`)."""
    from ttt_lab.studies import named

    out = []
    for name, places in named.all_studies().items():
        clash = named.clashing(places)
        out += [NamedStudyPlace(name, p.origin, p.path, named.question(p.path), clash, i == 0)
                for i, p in enumerate(places)]
    return out
