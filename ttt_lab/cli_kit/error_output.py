"""The one way an expected failure reaches the user: one paragraph on stderr, secrets redacted."""

from __future__ import annotations

import sys


def print_error(error: Exception) -> None:
    """`Error: <message>` on stderr, the message's own markup shown as text."""
    from rich.console import Console
    from rich.markup import escape

    from ttt_lab.redact import redacted

    Console(file=redacted(sys.stderr), stderr=True).print(f"[bold red]Error:[/] {escape(str(error))}",
                                                                 highlight=False, soft_wrap=True)
