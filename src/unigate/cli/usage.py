"""`unigate usage`: the usage and cost report of `GET /admin/usage`, read from the database
of the server (found as `unigate keys` finds it), as a table or as CSV."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from unigate.cli.keys import database_url
from unigate.cli.serve import ConfigOpt, settings_for
from unigate.cli.startup import StartupError, debug_wanted, report, with_database
from unigate.errors import InvalidRequest
from unigate.usage.query import METRICS, UsageQuery, run, to_csv

if TYPE_CHECKING:
    from unigate.store.aio import AsyncEngine

# The admin API's parameter names as options, for messages.
OPTIONS = {"group_by": "--group-by", "since": "--since", "until": "--until", "bucket": "--bucket"}


def usage(
    group_by: Annotated[
        str | None,
        typer.Option(
            "--group-by",
            help="Comma-separated: key, model, provider, endpoint, batch "
            "(default: key,endpoint,model; '' totals).",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="From this time: Unix seconds or ISO 8601 (UTC by default).")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="Before this time (same forms).")] = None,
    bucket: Annotated[
        str | None, typer.Option("--bucket", help="Time buckets: minute, hour or day (UTC).")
    ] = None,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Requests, tokens, cost, errors and mean latency, grouped and per time bucket."""
    given = {"group_by": group_by, "since": since, "until": until, "bucket": bucket}
    try:
        query = UsageQuery.parse({name: value for name, value in given.items() if value is not None})
    except InvalidRequest as exc:
        param = exc.param or ""
        report(StartupError(exc.message.replace(f"'{param}'", OPTIONS.get(param, param))), debug_wanted())

    async def work(engine: AsyncEngine) -> list[dict[str, Any]]:
        return await run(engine, query)

    try:
        rows = with_database(database_url(settings_for(config)), work)
    except StartupError as exc:
        report(exc, debug_wanted())
    if as_csv:
        sys.stdout.write(to_csv(query, rows).decode())
        return
    table = Table(*query.columns(), title="unigate usage")
    for column in table.columns:
        if column.header in METRICS or column.header == "bucket_start":
            column.justify = "right"
    for row in rows:
        table.add_row(*(Text(_cell(row.get(c))) for c in query.columns()))
    Console(width=200).print(table)
    if not rows:
        print("no usage in this range")


def _cell(value: object) -> str:
    """A cell as text: whole numbers plainly, cost to six places, never markup (Text)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".") if value else "0"
    text = str(value)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[:120])
