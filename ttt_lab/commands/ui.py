"""`ttt-lab ui`: `ttt_lab.api.ui_server` says what to serve and serves it; this command says where,
warns of a server open to the network, and stops it on Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal

from rich.console import Console

from ttt_lab import api

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def serve(overrides: list[str], host: str, port: int, console: Console, optuna: str | None = None,
          storage: str | None = None) -> None:
    """The MLflow UI on the project's store, or (`optuna`: a study's name) optuna-dashboard on its storage."""
    server = api.ui_server(overrides, host=host, port=port, optuna=optuna, storage=storage)
    # Ctrl-C and SIGTERM stop the server, even when started from a background job that ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    if host not in LOOPBACK:
        console.print(f"[yellow]warning:[/] --host {host} serves {server.serves} to anyone who can reach this "
                      f"machine on port {port}, with no login. Use --host 127.0.0.1 (the default) and an SSH "
                      "tunnel unless that is what you want.", highlight=False)
    console.print(f"starting the {server.name} at [bold]{server.url}[/] ({server.source})...", highlight=False)
    try:
        server.serve(lambda: console.print(f"{server.name} ready at [bold]{server.url}[/]; Ctrl-C to stop (server "
                                           f"log: {server.log_path}).", highlight=False))
    except KeyboardInterrupt:
        console.print(f"stopping the {server.name}...")
