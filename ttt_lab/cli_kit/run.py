"""What every `ttt-lab` command shares below the typer app: the overrides argument, the console
(secrets redacted), and the runner that turns expected failures into one paragraph and exit code 2.
Imports nothing heavy: `ttt-lab --help` must stay fast."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
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


def with_options(cls: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command's `options` parameter as one `--flag` per field of the frozen dataclass `cls`
    (the flag, help and bounds its field's metadata declares): the command gets `cls(...)` whole,
    so an option is declared once, where `cls` declares it."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "options"]
        hints = typing.get_type_hints(cls)
        fields = dataclasses.fields(cls)
        flags = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=Annotated[
            hints[f.name], typer.Option(f.metadata["flag"], help=f.metadata["help"],
                                        **{k: v for k, v in f.metadata.items() if k not in ("flag", "help")})])
            for f in fields]

        def command(**given: Any) -> Any:
            options = cls(**{f.name: given.pop(f.name) for f in fields})
            return fn(**given, options=options)

        command.__name__, command.__doc__ = fn.__name__, fn.__doc__
        command.__signature__ = inspect.Signature([*own, *flags])  # type: ignore[attr-defined]
        return command

    return wrap
