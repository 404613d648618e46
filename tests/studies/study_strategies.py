"""Hypothesis strategies for study files and command-line grids drawn from the study schema
(`ttt_lab.studies.spec.FILE_KEYS`): each key's value is a good one, one at a boundary, or one
that cannot mean what its user meant, on small grids of the smoke experiment (quick to plan).
Also the places a study writes (home, tracking, storage), pointed at the wrong kind of thing.
Shared by tests/studies/test_checks_property.py (make test) and its fuzzing run (make test-slow)."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ttt_lab.evaluation.metric_names import trial_metrics
from ttt_lab.studies.spec import FILE_KEYS

ABSENT = object()
"""A key left out of the study file."""

PARAMS = {
    "batch_size": ["8,16", "8", "8,8", "range(0,0)", "choice(8,16)", "interval(8,16)", "7,9", "'8','16'"],
    "seed": ["0,1", "0,1,2", "0", "range(0,3)", "a,b", "-1,0"],
    "train.sft.seed": ["0,1", "0"],
    "lr": ["1e-4,1e-3", "interval(1e-5,1e-3)", "tag(log, interval(0,1e-3))", "interval(1e-3,1e-5)", "-1,1"],
    "temperature": ["interval(0.7,1.5)", "0.5,1.0", "interval(-1,1)"],
    "opponent": ["minimax,random", "minimax,nope", "glob(minimax*)"],
    "no.such.key": ["1,2"],
    "train.eval_every": ["0,5"],
}
METRICS = [*sorted(trial_metrics())[::7], "eval/optimal/draw_rate", "eval/optimal/drawrate",
           "eval/minimax_p25/win_rate", "audit/policy/nope", "my/own_metric", ""]
FIXED = ["train.eval_every=5", "train.eval_every=0", "audit.policy.in_studies=true", "eval.mode=sampled",
         "train.processes=2", "batch_size=8"]
PLACES = ["a_file", "a_folder", "not_a_db", "a_db", "new/inside", "a_file/below"]
"""Names under the test's `Places.root`: an existing file, a folder, a file that is not SQLite, a
SQLite file, a path not there yet, a path below a file."""


@dataclass
class Places:
    root: Path

    def make(self) -> None:
        (self.root / "a_folder").mkdir(parents=True, exist_ok=True)
        (self.root / "a_file").write_text("a file\n")
        (self.root / "not_a_db").write_text("name: not a database\n")
        with sqlite3.connect(self.root / "a_db") as db:
            db.execute("CREATE TABLE IF NOT EXISTS t (x)")

    def __call__(self, name: str) -> str:
        return str(self.root / name)


def _value(key: str, places: Places) -> st.SearchStrategy[Any]:
    place = st.sampled_from(PLACES).map(places)
    return {
        "name": st.sampled_from(["fz", "fz-2", "bad/name", ""]),
        "question": st.just("Does it?"),
        "overrides": st.lists(st.sampled_from(FIXED) | place.map(lambda p: f"home={p}")
                              | place.map(lambda p: f"tracking.uri=sqlite:///{p}")
                              | place.map(lambda p: f"tracking.artifacts={p}") | place.map(lambda p: f"audit.out={p}"),
                              max_size=3).map(lambda xs: ["experiment=smoke", *xs]),
        "params": st.dictionaries(st.sampled_from(sorted(PARAMS)), st.just(""), min_size=1, max_size=3).flatmap(
            lambda d: st.fixed_dictionaries({k: st.sampled_from(PARAMS[k]) for k in d})),
        "objective": st.fixed_dictionaries(
            {"metric": st.sampled_from(METRICS), "direction": st.sampled_from(["maximize", "minimize", "up"])},
            optional={"custom": st.booleans()}) | st.lists(st.fixed_dictionaries(
                {"metric": st.sampled_from(METRICS), "direction": st.sampled_from(["maximize", "minimize"])}),
                min_size=1, max_size=2),
        "kind": st.sampled_from(["grid", "search", "nope"]),
        "n_trials": st.sampled_from([0, 1, 2, -1, 10**6]),
        "sampler": st.sampled_from([{"name": "tpe", "seed": 0}, {"name": "random"}, {"name": "grid"},
                                    {"name": "tpe", "seed": -1}, {"name": "tpe", "n_startup_trials": "x"},
                                    {"name": "tpe", "multivariate": 1}, {"name": "nope"}]),
        "pruner": st.sampled_from([{"name": "none"}, {"name": "median", "n_startup_trials": 1},
                                   {"name": "halving", "reduction_factor": 1}, {"name": "halving", "min_resource": 0},
                                   {"name": "threshold"}, {"name": "threshold", "lower": 0.5, "upper": 0.1},
                                   {"name": "threshold", "lower": 0.1}, {"name": "median", "n_warmup_steps": -1}]),
        "workers": st.sampled_from([0, 1, 2, -3]),
        "baseline": st.sampled_from(["batch_size=8", "batch_size=16", "batch_size=32", "seed=0", "(baseline)",
                                     "opponent=minimax", "BATCH_SIZE=8"]),
        "margin": st.sampled_from([0, 0.05, 0.5, 1, 1.5, 2.5, -0.1, 1e-9]),
        "max_seeds": st.sampled_from([1, 2, 3, 9]),
        "decisions": st.sampled_from(["anytime", "fixed", "bayes"]),
        "looks": st.sampled_from([[2], [3], [2, 4], [4, 2], [], [1]]),
        "bounds": st.sampled_from([[0, 1], [1, 0], [-1, 1], [0, 0.01], [0], [0, 1e9]]),
        "collapse_below": st.sampled_from([0.6, -1, 2, 1.0, 0.0]),
        "collapse_alpha": st.sampled_from([0.01, 0.04, 0.049, 0.5, 0.0]),
        "mean_alpha": st.sampled_from([0.01, 0.0, 0.039, 0.049, 0.5, -0.1]),
        "delta": st.sampled_from([0.0, 0.1, 0.49, 0.5, -0.1]),
        "blocks": st.sampled_from([["train.sft.seed"], ["seed"], ["batch_size"], ["no.such.key"]]),
    }[key]


def study_files(places: Places) -> st.SearchStrategy[dict[str, Any]]:
    """A study file's mapping: params always, each other key of the schema present or not."""
    optional = {k: _value(k, places) for k in FILE_KEYS if k != "params"}
    return st.fixed_dictionaries({"params": _value("params", places)}, optional=optional)


@dataclass(frozen=True)
class Options:
    """`ttt_lab.api.sweep`'s options a study command takes besides the study."""

    workers: int | None = None
    max_failures: int | None = None
    trial_timeout: float | None = None
    until_settled: bool = False
    max_seeds: int | None = None
    trials: int | None = None
    storage: str | None = None

    def kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False)}

    def flags(self) -> list[str]:
        out = []
        for k, v in self.kwargs().items():
            flag = "--" + k.replace("_", "-")
            out += [flag] if v is True else [flag, str(v)]
        return out


def options(places: Places) -> st.SearchStrategy[Options]:
    storage = st.sampled_from(PLACES).flatmap(lambda p: st.sampled_from(
        [f"sqlite:///{places(p)}", f"journal:///{places(p)}"]))
    return st.builds(
        Options,
        workers=st.none() | st.sampled_from([0, 1, 2, -1]),
        max_failures=st.none() | st.sampled_from([0, 1, -2]),
        trial_timeout=st.none() | st.sampled_from([0.0, 1.0, 3600.0, -5.0, float("inf")]),
        until_settled=st.booleans(),
        max_seeds=st.none() | st.sampled_from([0, 1, 2, 3, 9]),
        trials=st.none() | st.sampled_from([0, 2]),
        storage=st.none() | st.none() | storage,
    )


def command_lines(places: Places) -> st.SearchStrategy[list[str]]:
    """`ttt-lab sweep KEY=VALUES ...` without a study file: swept keys and fixed overrides."""
    swept = st.dictionaries(st.sampled_from(sorted(PARAMS)), st.just(""), min_size=1, max_size=2).flatmap(
        lambda d: st.tuples(*(st.sampled_from(PARAMS[k]).map(lambda v, k=k: f"{k}={v}") for k in d)))
    return st.tuples(swept, _value("overrides", places)).map(lambda t: [*t[1], *t[0]])


TRANSIENT = (".lock", "-journal", "-wal", "-shm")
"""Lock files and SQLite's own side files: made and removed by any reader, not what was written."""


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` -> a hash of its bytes (lock and SQLite side files left out)."""
    return {str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink() and not p.name.endswith(TRANSIENT)}
