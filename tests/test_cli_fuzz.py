"""The CLI under fuzzed input: hypothesis-generated overrides over the schema's keys (wrong types,
out-of-range numbers, NaN and infinities, empty and very long strings, unknown keys and groups)
for `config show`, `eval` and `sweep --dry-run`, and study files of random structure. Every call
ends with exit 0 or 2 (a one-paragraph error), never a traceback, and writes nothing outside
the home (the working folder stays empty)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import cli
from ttt_lab.config.flatten import flat_items
from ttt_lab.config.load import aliases, conf_dir, defaults_tree, groups

KEYS = sorted(flat_items(defaults_tree()))
"""Every leaf of the schema, as the user writes it (`train.phases.0.batch_size`)."""
SHORT = sorted(aliases())
GROUPS = sorted(groups())
OPTIONS = sorted(f"{g}={p.stem}" for g in GROUPS for p in (conf_dir() / g).glob("*.yaml"))
"""Every real choice of every config group (`player=hf`, `experiment=smoke`, ...)."""

_TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
"""Anything a shell can pass in an argument (no NUL, no lone surrogate)."""
NUMBERS = st.one_of(st.integers(-(2**70), 2**70).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.sampled_from(["nan", "inf", "-inf", "NaN", "1e309", "-0.0", "0x10", "1_000", "+5", ".5"]))
VALUES = st.one_of(
    NUMBERS,
    st.sampled_from(["", "abc", "true", "false", "null", "None", "[1,2]", "[]", "{}", "{a: 1}", "'quoted'", "???",
                     "${oc.env:TTT_LAB_FUZZ_UNSET}", "${nope}", "${seed}", "a,b", "range(0,3)", "choice(1,2)",
                     "interval(0,1)", "glob(*)", "../../outside", "/tmp", "runs", "-", "=", "\\", "'", '"']),
    st.text(_TEXT, max_size=20),
    st.integers(1000, 20_000).map(lambda n: "x" * n),
)
"""Wrong types, out-of-range and non-finite numbers, sweep syntax where it does not belong,
empty, odd and very long strings."""
UNKNOWN = st.from_regex(r"[a-z_]{1,12}(\.[a-z_]{1,12}){0,2}", fullmatch=True)
LOCATIONS = ("home", "tracking.uri", "tracking.artifacts", "launcher.log_dir", "model.path",
             "train.vllm_server_base_url", "player.base_url")
"""Settings that say where to read or write: a value there is the user's choice of place, so
the fuzzer gives them types and numbers, not folder names."""


def _override(key: str, value: str, prefix: str) -> str:
    if key in LOCATIONS and not value.lstrip("-").replace(".", "").isdigit():
        value = "12"
    return f"{prefix}{key}={value}"


OVERRIDE = st.one_of(
    st.builds(_override, st.sampled_from(KEYS + SHORT), VALUES, st.sampled_from(["", "", "+", "++"])),
    st.builds(lambda k: f"~{k}", st.sampled_from(KEYS) | UNKNOWN),
    st.builds(lambda g, v: f"{g}={v}", st.sampled_from(GROUPS),
              st.sampled_from(["nope", "", "[a,b]", "null"]) | UNKNOWN),
    st.sampled_from(OPTIONS),
    st.builds(lambda k, v: f"{k}={v}", UNKNOWN, VALUES),
    st.text(_TEXT, min_size=1, max_size=30),
)
OVERRIDES = st.lists(OVERRIDE, min_size=1, max_size=3)

SETTINGS = settings(max_examples=int(os.environ.get("TTT_LAB_FUZZ_EXAMPLES", "25")),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture
def places(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(home, an empty working folder the CLI runs in)."""
    work = tmp_path / "work"
    work.mkdir()
    return home, work


def _check(out, work: Path, *args: str) -> None:
    said = out.stdout + out.stderr
    assert out.returncode in (0, 2), f"ttt-lab {' '.join(args)!r} exited {out.returncode}:\n{said[-3000:]}"
    assert "Traceback" not in said, f"ttt-lab {' '.join(args)!r} printed a traceback:\n{said[-3000:]}"
    if out.returncode == 2:
        assert out.stderr.strip(), f"ttt-lab {' '.join(args)!r} exited 2 without saying why"
    assert not any(work.iterdir()), f"ttt-lab {' '.join(args)!r} wrote {sorted(work.rglob('*'))} outside the home"


def _run(work: Path, *args: str):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    out = cli(*args, check=False, cwd=str(work), env=env, timeout=240)
    _check(out, work, *args)
    return out


@SETTINGS
@given(OVERRIDES)
def test_config_show_survives_fuzzed_overrides(places, overrides: list[str]) -> None:
    _run(places[1], "config", "show", *overrides)


@pytest.mark.slow  # make test keeps `config show` above (the overrides every command loads) and eval's cases
@SETTINGS
@given(OVERRIDES)
def test_eval_survives_fuzzed_overrides(places, overrides: list[str]) -> None:
    _run(places[1], "eval", "games=2", "eval.mode=exact", *overrides)


@pytest.mark.slow  # as eval's: `config show` above, and the sweep's bad-input cases in test_sweep.py
@SETTINGS
@given(OVERRIDES)
def test_sweep_dry_run_survives_fuzzed_overrides(places, overrides: list[str]) -> None:
    _run(places[1], "sweep", "--dry-run", "experiment=smoke", *overrides)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True),
                    st.text(_TEXT, max_size=30), st.sampled_from([*KEYS, "eval/optimal/draw_rate", "maximize"]))
STRUCTURE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["metric", "direction", "seed", "batch_size", "a"]) | st.text(_TEXT, max_size=8), inner,
    max_size=3), max_leaves=8)
STUDY_KEYS = ["name", "question", "overrides", "params", "objective", "baseline", "kind", "n_trials", "sampler",
              "pruner", "seed", "n_startup_trials", "multivariate", "constant_liar"]
STUDY = st.one_of(
    st.dictionaries(st.sampled_from(STUDY_KEYS) | st.text(_TEXT, max_size=10), STRUCTURE, max_size=8),
    st.fixed_dictionaries({"name": st.text(_TEXT, max_size=20) | st.just("fuzz"), "params": STRUCTURE,
                           "objective": STRUCTURE},
                          optional={"overrides": STRUCTURE, "kind": st.sampled_from(["grid", "search", "nope"]),
                                    "n_trials": SCALARS, "sampler": STRUCTURE, "pruner": STRUCTURE}),
    STRUCTURE,
)
"""Study files of random structure: known and unknown keys, any nesting, any scalar."""


@pytest.mark.slow  # in make test: any study file is a spec or one clear error, in process (test_spec_grid.py)
@SETTINGS
@given(STUDY | st.text(_TEXT, max_size=200))
def test_sweep_survives_study_files_of_random_structure(places, tmp_path: Path, study) -> None:
    folder = tmp_path / "studies"
    folder.mkdir(exist_ok=True)
    path = folder / "fuzz.yaml"
    path.write_text(study if isinstance(study, str) else yaml.safe_dump(study, allow_unicode=True))
    _run(places[1], "sweep", str(path), "--dry-run", "experiment=smoke")
    assert sorted(p.name for p in folder.iterdir()) == ["fuzz.yaml"], "nothing written beside the study file"


@pytest.mark.parametrize("args", [("runs", "list", "--limit", "50001"), ("runs", "list", "--limit", "0"),
                                  ("reproduce", "0123456789abcdef", "--steps", "0"),
                                  ("reproduce", "0123456789abcdef", "--steps", "-3")])
def test_numbers_outside_an_options_range_stop_before_work(places, args: tuple[str, ...]) -> None:
    """A count no command can honour (MLflow returns at most 50,000 runs; a rerun of 0 steps
    compares nothing) is refused by the option itself, exit 2, before the store is opened."""
    _, work = places
    assert _run(work, *args).returncode == 2
