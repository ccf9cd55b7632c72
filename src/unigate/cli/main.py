"""`unigate serve`, `unigate keys create|list|revoke`, `unigate usage`, `unigate migrate`,
`unigate providers check`, `unigate reload` and
`unigate --version` (a stable contract: users' scripts rely on it)."""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Annotated

import typer

import unigate
from unigate.cli.keys import keys_app
from unigate.cli.migrate import migrate
from unigate.cli.providers import providers_app
from unigate.cli.reload import reload
from unigate.cli.serve import serve
from unigate.cli.usage import usage

app = typer.Typer(add_completion=False, no_args_is_help=True, help="unigate: a unified model gateway.")
app.add_typer(keys_app, name="keys")
app.add_typer(providers_app, name="providers")
app.command()(serve)
app.command()(usage)
app.command()(migrate)
app.command()(reload)


def _version() -> str:
    try:
        return metadata.version("unigate")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return unigate.__version__


def _print_version(value: bool) -> None:
    if value:
        print(f"unigate {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """unigate: a unified model gateway."""


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
