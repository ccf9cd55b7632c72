"""Logging setup. Log lines never carry keys: handlers log key ids, never headers or bodies."""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str = "info") -> None:
    root = logging.getLogger()
    if any(getattr(h, "_unigate", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._unigate = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Third-party debug output carries secrets: SQL parameters (key hashes, webhook secrets)
    # from the database drivers, URLs with query-string credentials from aiohttp. Our own
    # loggers follow `level`; these never go below WARNING.
    for name in ("aiosqlite", "sqlalchemy", "asyncpg", "aiohttp", "alembic", "uvicorn.access"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
