import subprocess
import sys

HEAVY = ("torch", "transformers", "trl", "mlflow", "optuna", "hydra", "omegaconf", "vllm")


def test_importing_the_cli_imports_nothing_heavy() -> None:
    code = "import sys, ttt_lab.cli; print(' '.join(sorted(m for m in sys.modules if '.' not in m)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert not [m for m in out if m in HEAVY]


def test_every_command_has_help_with_an_example() -> None:
    from tests.conftest import cli

    for cmd in (["config", "show"], ["eval"], ["play"], ["ui"], ["runs", "list"]):
        out = cli(*cmd, "--help")
        assert "Example" in out.stdout and "ttt-lab" in out.stdout, cmd
