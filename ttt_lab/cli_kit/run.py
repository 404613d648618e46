"""What every `ttt-lab` command shares below the typer app: the overrides argument, the console
(secrets redacted), and the runner that turns expected failures into one paragraph and exit code 2.
Imports nothing heavy: `ttt-lab --help` must stay fast."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ttt_lab.completion import complete_overrides

STATE = {"debug": False}
"""`--debug`: errors raise with their traceback instead of one paragraph."""
Overrides = Annotated[
    list[str] | None,
    typer.Argument(help="Hydra overrides: key=value, group=option, +key=value, ~key; short names such as "
                   "batch_size=256 work.", show_default=False, autocompletion=complete_overrides),
]


def run(fn: Callable[[], Any]) -> Any:
    """Run a command body; expected failures become one paragraph on stderr and exit code 2."""
    from ttt_lab.errors import TttLabError

    try:
        try:
            result = fn()
        except TttLabError:
            raise
        except Exception as e:
            from ttt_lab.errors import as_disk_full
            from ttt_lab.sqlite_files import as_store_error

            known = as_disk_full(e) or as_store_error(e)
            if known is None:
                raise
            raise known from e
    except TttLabError as e:
        if STATE["debug"]:
            raise
        from ttt_lab.cli_kit.error_output import print_error

        print_error(e)
        _exit_now(2)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        print("\nInterrupted; nothing written so far was lost.", file=sys.stderr)
        raise typer.Exit(130) from None
    _exit_now(result if isinstance(result, int) else 0)
    return result


def _exit_now(code: int) -> None:
    """After a command that loaded torch, end the process at once: Python's tear-down of torch,
    transformers and TRL takes seconds at every exit and writes nothing. Streams are flushed and
    atexit handlers run first; every file ttt-lab writes is closed by then."""
    if "torch" not in sys.modules:
        return
    import atexit
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def console():
    """The command's console (secrets redacted); ttt-lab's log lines and events are drawn there too."""
    from rich.console import Console

    from ttt_lab.cli_kit import front
    from ttt_lab.redact import redacted

    out = redacted(sys.stdout)
    made = Console(file=out) if sys.stdout.isatty() else Console(file=out, width=160)
    front.install(made)
    return made
