"""The package's layout holds: imports point down the layers only, no module imports itself
back through others, and every module and function fits on a screen."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ttt_lab"
LAYERS = [
    {"errors", "__init__"},
    {"events"},
    {"progress", "locks", "pages", "redact", "names", "atomic", "sqlite_files", "timing", "formats", "log"},
    {"first_use"},
    {"stats"},
    {"game"},
    {"env"},
    {"config"},
    {"engine"},
    {"players", "tracking"},
    {"evaluation"},
    {"train"},
    {"audit"},
    {"studies"},
    {"report"},
    {"api"},
    {"completion"},
    {"cli_kit"},
    {"commands"},
    {"cli"},
]
"""Each package may import the ones in the rows above it only. Audits (domain logic) sit below
studies (orchestration): a study trial runs the policy audit of its checkpoint. The rows below
`api` are the CLI layer: shell completion, `cli_kit` (the runner and what draws on the console),
the commands, and the typer app that registers them (tests/test_route.py keeps them on the API)."""
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _dynamic_import(node: ast.AST) -> str | None:
    """The module a call `importlib.import_module("ttt_lab.x")` or `__import__("ttt_lab.x")` loads,
    when named by a constant (the literal part of an f-string counts): lazy loading is an import too."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    fn = node.func
    name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
    if name not in ("import_module", "__import__"):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        arg = arg.values[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("ttt_lab"):
        return arg.value.rstrip(".")
    return None


def _imports_of(source: str) -> set[str]:
    """Every ttt_lab module `source` imports, at the top, inside a function or by importlib."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ttt_lab"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("ttt_lab"))
        elif (dynamic := _dynamic_import(node)) is not None:
            out.add(dynamic)
    return out


def _imports(path: Path) -> set[str]:
    return _imports_of(path.read_text())


def graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in files and i != m} for m, p in files.items()}


def layer(module: str) -> int:
    """The row naming `module`'s package (or top-level module); the package `ttt_lab` itself is `__init__`."""
    top = (module.split(".")[1:] or ["__init__"])[0]
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"{module}: its package is in no layer of tests/test_layout.py; add it")


def package(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def runs_up(module: str, imported: str) -> bool:
    """An import up the rows, or sideways into another package of the same row; within a package
    and a row, modules import each other freely."""
    if layer(imported) == layer(module):
        return package(imported) != package(module)
    return layer(imported) > layer(module)


def test_imports_point_down_the_layers() -> None:
    wrong = [f"{m} -> {i}" for m, deps in graph().items() for i in deps if runs_up(m, i)]
    assert not wrong, "imports that run up (or sideways) the layers:\n" + "\n".join(sorted(wrong))


def test_the_rows_order_the_cli_layer() -> None:
    assert runs_up("ttt_lab.cli_kit.tables", "ttt_lab.commands.train")
    assert not runs_up("ttt_lab.commands.train", "ttt_lab.cli_kit.run")
    assert not runs_up("ttt_lab.cli", "ttt_lab.commands.sweep")
    assert runs_up("ttt_lab.commands.train", "ttt_lab.cli")
    assert runs_up("ttt_lab.studies.runner", "ttt_lab.api")
    assert not runs_up("ttt_lab.studies.runner", "ttt_lab.studies.plan")
    assert layer("ttt_lab") == 0 and layer("ttt_lab.cli_kit") == layer("ttt_lab.cli_kit.front")


def test_a_dynamic_upward_import_is_seen() -> None:
    source = ("import importlib\n"
              "def f(name):\n"
              "    importlib.import_module('ttt_lab.api')\n"
              "    __import__(f'ttt_lab.studies.{name}')\n")
    found = _imports_of(source)
    assert {"ttt_lab.api", "ttt_lab.studies"} <= found
    assert all(layer(i) > layer("ttt_lab.atomic") for i in found)  # upward from a helper: the test fails


def _cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circle() -> None:
    cycle = _cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_fit_on_a_screen(path: Path) -> None:
    source = path.read_text()
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{path.name}: over {MAX_MODULE_LINES} lines"
    functions = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in functions
            if n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"
