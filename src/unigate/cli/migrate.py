"""`unigate migrate`: bring the database schema to the newest revision and exit.

`unigate serve` migrates by itself on start; a deployment of several replicas runs this once
before starting (or upgrading) them, so no replica serves on a schema it does not know and a
failed migration stops one job instead of every replica."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigate.cli.serve import ConfigOpt, settings_for
from unigate.cli.startup import StartupError, debug_wanted, report, with_database

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def migrate(config: ConfigOpt = None) -> None:
    """Apply the database migrations (UNIGATE_DATABASE_URL) and exit."""
    from unigate.store.db import shown_revision

    async def revision(engine: AsyncEngine) -> str:
        return await shown_revision(engine)

    settings = settings_for(config)
    try:
        head = with_database(settings.database_url, revision)
    except StartupError as exc:
        report(exc, debug_wanted())
    print(f"database schema at revision {head}", flush=True)
