"""The package as users install it: what the wheel carries, its version, the private internals of
dependencies it relies on, and (slow) the wheel installed outside the checkout and used."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import BIN, cli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("wheel")  # one build at a time: setuptools writes build/ in the checkout


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_and_config_group_is_listed_for_the_wheel() -> None:
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    python = {".".join(p.parent.relative_to(ROOT).parts) for p in ROOT.glob("ttt_lab*/**/__init__.py")}
    groups = {f"ttt_lab.conf.{p.name}" for p in (ROOT / "conf").iterdir() if p.is_dir()}
    missing = sorted((python | groups | {"ttt_lab.conf", "ttt_lab.sweeps"}) - listed)
    assert not missing, f"add to [tool.setuptools] packages and package-data in pyproject.toml: {missing}"
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    assert sorted(g for g in groups if g not in data) == []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools copies what build/lib holds, deleted modules too
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, cwd=out)
    (found,) = out.glob("ttt_lab-*.whl")
    return found


def test_the_wheel_carries_the_config_tree_the_studies_and_the_types(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"ttt_lab/conf/{p.relative_to(ROOT / 'conf')}" for p in (ROOT / "conf").rglob("*.yaml")}
    shipped |= {f"ttt_lab/sweeps/{p.name}" for p in (ROOT / "sweeps").glob("*.yaml")}
    assert "ttt_lab/conf/config.yaml" in shipped and "ttt_lab/sweeps/quickstart.yaml" in shipped
    assert sorted(shipped - names) == []
    assert {"ttt_lab/py.typed", "ttt_lab/templates/report.html.j2",
            "ttt_lab_verifiers/environment.py"} <= names
    source = {str(p.relative_to(ROOT)) for d in ("ttt_lab", "ttt_lab_verifiers") for p in (ROOT / d).rglob("*.py")}
    assert {n for n in names if n.endswith(".py")} == source  # no module the tree has lost (a stale build/)


def test_version_is_the_package_metadata() -> None:
    import ttt_lab

    out = cli("--version")
    assert out.stdout.strip() == f"ttt-lab {version('ttt-lab')}"
    assert ttt_lab.__version__ == version("ttt-lab")


def test_the_private_internals_ttt_lab_uses_are_where_it_expects_them() -> None:
    """Bounded in pyproject.toml; a release that moves one fails here, by name."""
    import submitit.slurm.slurm as slurm
    import transformers.cache_utils as cache_utils

    for name in ("Cache", "DynamicLayer"):
        assert hasattr(cache_utils, name), f"transformers.cache_utils.{name} moved (ttt_lab/engine/kv_cache.py)"
    assert hasattr(slurm, "_make_sbatch_string"), \
        "submitit.slurm.slurm._make_sbatch_string moved (studies/launchers/slurm.py)"
    params = inspect.signature(slurm._make_sbatch_string).parameters
    assert {"command", "folder", "map_count"} <= set(params), "submitit's sbatch builder changed its parameters"


def test_declared_dependencies_cover_what_the_code_imports() -> None:
    declared = {d.split(">")[0].split("<")[0].split("[")[0].split("=")[0].strip().lower()
                for d in _pyproject()["project"]["dependencies"]}
    for needed in ("numpy", "sqlalchemy", "pyyaml", "pandas", "pyarrow", "submitit", "transformers"):
        assert needed in declared, needed
    assert "psycopg[binary]>=3.2" in _pyproject()["project"]["optional-dependencies"]["postgresql"]
    sqlalchemy = next(d for d in _pyproject()["project"]["dependencies"] if d.lower().startswith("sqlalchemy"))
    assert ">=2.1" in sqlalchemy  # a bare postgresql:// URL means psycopg 3 from 2.1 on


@pytest.mark.slow
def test_the_wheel_installed_outside_the_checkout_works(wheel: Path, tmp_path: Path) -> None:
    """A fresh virtual environment holding only the wheel (not editable); its dependencies are
    the development environment's (CI's `make wheel-smoke` installs them from the registry)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TTT_LAB_") and k != "PYTHONPATH"}
    out = subprocess.run(["bash", str(ROOT / "tests" / "wheel_smoke.sh"), str(venv), str(work)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "wheel smoke test passed" in out.stdout
    assert BIN.exists()  # the checkout's own install is untouched
