"""Commands → API → domain is the only route: a command imports no domain package and each of its
functions calls at most one `ttt_lab.api` function (every command module calls one), so what the
CLI does is what the API does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ttt_lab"
COMMANDS = sorted(p for p in (PACKAGE / "commands").glob("*.py") if p.name != "__init__.py")
DOMAIN = {"stats", "game", "env", "config", "engine", "players", "tracking", "evaluation", "train", "audit",
          "studies", "report"}
FRONT = [PACKAGE / "cli.py", PACKAGE / "completion.py"]
"""The typer app and shell completion: no command body, but no way around the API either."""


def domain_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [n for n in names if n.split(".")[:1] == ["ttt_lab"] and n.split(".")[1:2] and
                  n.split(".")[1] in DOMAIN]
    return found


def api_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The local names bound to the API module, and to its functions."""
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ttt_lab":
            modules |= {a.asname or a.name for a in node.names if a.name == "api"}
        elif isinstance(node, ast.ImportFrom) and node.module == "ttt_lab.api":
            functions |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == "ttt_lab.api" and a.asname}
    return modules, functions


def api_calls(fn: ast.AST, modules: set[str], functions: set[str]) -> set[str]:
    calls = set()
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
            calls.add(f.attr)
        elif isinstance(f, ast.Name) and f.id in functions:
            calls.add(f.id)
    return calls


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.stem)
def test_a_command_goes_through_the_api(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not domain_imports(tree), f"{path.name} imports the domain: {domain_imports(tree)}"
    modules, functions = api_names(tree)
    per_function = {fn.name: api_calls(fn, modules, functions) for fn in ast.walk(tree)
                    if isinstance(fn, ast.FunctionDef)}
    several = {name: sorted(calls) for name, calls in per_function.items() if len(calls) > 1}
    assert not several, f"{path.name}: functions calling several API functions: {several}"
    assert set().union(*per_function.values()), f"{path.name} calls no ttt_lab.api function"


def test_every_domain_package_is_named() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages - DOMAIN == {"api", "cli_kit", "commands"}, packages - DOMAIN


@pytest.mark.parametrize("path", FRONT, ids=lambda p: p.stem)
def test_the_app_and_completion_go_through_the_api(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not domain_imports(tree), f"{path.name} imports the domain: {domain_imports(tree)}"


def test_the_checks_see_a_domain_import_and_a_second_api_call() -> None:
    tree = ast.parse("from ttt_lab import api\nfrom ttt_lab.studies.runner import run_study\n"
                     "def body():\n    api.load_config([])\n    return api.train([])\n")
    assert domain_imports(tree) == ["ttt_lab.studies.runner"]
    modules, functions = api_names(tree)
    assert api_calls(tree.body[2], modules, functions) == {"load_config", "train"}
