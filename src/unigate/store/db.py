"""Engine creation and migrations. SQLite by default; PostgreSQL when the URL says so."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import make_url

from unigate.data_dir.owner_only import DIR_MODE, private_file
from unigate.extras import require
from unigate.store.aio import AsyncConnection, AsyncEngine, create_async_engine

MIGRATIONS = Path(__file__).parent / "migrations"


def async_url(url: str) -> str:
    """Map the user's URL onto the async driver SQLAlchemy needs."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return str(parsed.set(drivername="sqlite+aiosqlite"))
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database URL scheme: {parsed.drivername}")


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"


def upsert_insert(dialect_name: str) -> Callable[[sa.Table], sqlite.Insert]:
    """The dialect's INSERT with ON CONFLICT (`on_conflict_do_update` / `_do_nothing`, the same
    arguments on both). PostgreSQL's dialect (~20 modules, 2 MB per worker) is imported only
    when the database is PostgreSQL."""
    if dialect_name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return cast(Callable[[sa.Table], sqlite.Insert], postgresql.insert)
    return sqlite.insert


def create_engine(url: str) -> AsyncEngine:
    target = async_url(url)
    kwargs: dict[str, Any] = {}
    if target.startswith("sqlite"):
        db_path = make_url(target).database
        if db_path and db_path != ":memory:":
            # Owner-only: key hashes and webhook secrets live in it. SQLite gives its -wal and
            # -shm files the database file's mode, so creating that 0600 covers all three.
            Path(db_path).parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            private_file(Path(db_path))
        kwargs["connect_args"] = {"timeout": 30, "factory": RollbackOnClose}
        # SQLite has one writer; hot reads bypass the pool (store/sqlite_reader.py). A small
        # pool bounds the threads and page caches each connection costs.
        kwargs.update(pool_size=3, max_overflow=4)
    else:
        require("postgres")  # SQLAlchemy would import asyncpg itself, failing with less to go on
        kwargs.update(pool_size=10, max_overflow=10, pool_pre_ping=True)
    engine = create_async_engine(target, **kwargs)
    if target.startswith("sqlite"):
        sa.event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


class RollbackOnClose(sqlite3.Connection):
    """A pooled SQLite connection that rolls back what it has open before it closes.

    A task cancelled in the middle of a statement (a client gone, a graceful stop) has its
    connection closed by SQLAlchemy instead of returned to the pool. A write statement with
    RETURNING has taken the write lock by then and is not reset until its cursor is collected,
    and SQLite cannot close a connection with such a statement: it keeps it, with the write
    lock, and every other writer of the database, in this process and others, waited out
    `busy_timeout` and failed with "database is locked". A rollback aborts the statement and
    releases the lock first."""

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.rollback()
        super().close()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets several worker processes read while one writes; NORMAL is durable in WAL mode
    # against process crashes (kill -9), which is the failure the task engine must survive.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    # 1 MiB page cache per pooled connection (default 2 MiB): these connections mostly write,
    # hot reads go through the single on-loop reader, and each worker holds several of them.
    cur.execute("PRAGMA cache_size=-1024")
    cur.close()


def _upgrade(conn: sa.Connection) -> None:
    # Imported here: Alembic (and Mako) cost several MB that request workers never need.
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


# pg_advisory_xact_lock key for schema upgrades (any constant; "unigate" in ASCII).
MIGRATION_LOCK = 0x756E6967617465


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision (idempotent, safe on every start).

    On PostgreSQL, replicas starting together on a fresh database all ran the first migration
    at once and all but one died on a duplicate CREATE TABLE; a transaction-scoped advisory
    lock makes them take turns, and the later ones find the schema at head."""
    async with engine.begin() as conn:
        if not is_sqlite(engine):
            await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(_upgrade)


async def shown_revision(engine: AsyncEngine) -> str:
    """The schema's current Alembic revision, for `unigate migrate` to report."""
    async with engine.connect() as conn:
        row = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).first()
    return str(row[0]) if row else "(none)"


async def ping(conn: AsyncConnection) -> None:
    await conn.execute(sa.text("SELECT 1"))


def is_outage(exc: BaseException) -> bool:
    """Whether `exc` says the database cannot take the call right now (down, restarting, the
    connection lost, its disk full), as opposed to a bug or bad data: such a request gets a
    503, not a 500. SQLite's "database or disk is full" (SQLITE_FULL) and "disk I/O error"
    (SQLITE_IOERR) are OperationalErrors; PostgreSQL's are asyncpg's DiskFullError and
    PostgresIOError. Drivers wrap their errors (SQLAlchemy's DBAPIError around an adapter's
    error around asyncpg's), so the whole chain is looked at."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, sa.exc.DBAPIError) and seen.connection_invalidated:
            return True
        if isinstance(seen, sa.exc.OperationalError | ConnectionError | TimeoutError):
            return True
        if type(seen).__name__ in _DRIVER_OUTAGES:
            return True
        orig = seen.orig if isinstance(seen, sa.exc.DBAPIError) else None
        seen = orig if orig is not None and orig is not seen else (seen.__cause__ or seen.__context__)
    return False


# asyncpg's names for a connection that is gone (its classes are not imported here: SQLite
# deployments never load asyncpg).
_DRIVER_OUTAGES = frozenset(
    {
        "ConnectionDoesNotExistError",
        "ConnectionFailureError",
        "CannotConnectNowError",
        "AdminShutdownError",
        "InternalClientError",
        "TooManyConnectionsError",
        "DiskFullError",  # SQLSTATE 53100
        "PostgresIOError",  # SQLSTATE 58030
    }
)


def failure_reason(exc: BaseException) -> str:
    """The driver's or the system's own words for a failure, in one line for a log (for
    SQLite's full disk: "OperationalError: database or disk is full")."""
    root = exc.orig if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None else exc
    if isinstance(root, OSError) and root.strerror:
        return f"{type(root).__name__}: {root.strerror}"
    text = " ".join(str(root).split())[:200]
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


def insert_sql(paramstyle: str, table: str, columns: tuple[str, ...]) -> str:
    """A driver-level INSERT for `executemany` (`exec_driver_sql`): batches written off the
    request path skip SQLAlchemy's per-row processing, which ran on the event loop."""
    if paramstyle == "qmark":
        marks = ["?"] * len(columns)
    elif paramstyle == "numeric_dollar":
        marks = [f"${i}" for i in range(1, len(columns) + 1)]
    elif paramstyle in ("format", "pyformat"):
        marks = ["%s"] * len(columns)
    else:
        raise ValueError(f"unsupported DBAPI paramstyle {paramstyle}")
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
