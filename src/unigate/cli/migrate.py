"""`unigate migrate`: bring the database schema to the newest revision and exit.

`unigate serve` migrates by itself on start; a deployment of several replicas runs this once
before starting (or upgrading) them, so no replica serves on a schema it does not know and a
failed migration stops one job instead of every replica. It finds the database as `unigate
keys` does: UNIGATE_DATABASE_URL, else UNIGATE_DATA_DIR, else ./.unigate only if it exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigate.cli.keys import database_url
from unigate.cli.startup import StartupError, debug_wanted, report, with_database
from unigate.settings import Settings

if TYPE_CHECKING:
    from unigate.store.aio import AsyncEngine


def migrate() -> None:
    """Apply the database migrations (UNIGATE_DATABASE_URL) and exit."""
    from unigate.store.db import shown_revision

    async def revision(engine: AsyncEngine) -> str:
        return await shown_revision(engine)

    try:
        head = with_database(database_url(Settings.from_env()), revision)
    except StartupError as exc:
        report(exc, debug_wanted())
    print(f"database schema at revision {head}", flush=True)
