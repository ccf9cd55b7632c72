"""Checks the CLI runs before it starts anything, each failing with a `StartupError` that says
what is wrong and how to fix it, printed by `report` as one `error:` line (exit code 2)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from unigate.cli.launch import bind
from unigate.data_dir.owner_only import private_dir, warn_if_open
from unigate.extras import MissingExtra, require
from unigate.observability.logs import check_format, check_level
from unigate.settings import Settings

if TYPE_CHECKING:
    from unigate.config import StorageConfig
    from unigate.store.aio import AsyncEngine

EXIT_CODE = 2
# Long enough for a remote server, short enough that a wrong host does not look like a hang
# (asyncpg's own connect timeout is a minute).
CONNECT_TIMEOUT = 10.0
T = TypeVar("T")


class StartupError(Exception):
    """A failure the user can fix; the message names the cause and the fix."""


def report(exc: BaseException, debug: bool) -> NoReturn:
    """One `error:` line on stderr and exit 2; with debug logging the traceback comes first."""
    if debug:
        traceback.print_exception(exc)
    message = " ".join(str(exc).split())  # config and driver messages can span lines
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(EXIT_CODE)


def require_extra(extra: str) -> None:
    """`extras.require` as a start-up check: a missing optional package is one error line."""
    try:
        require(extra)
    except MissingExtra as exc:
        raise StartupError(str(exc)) from None


def check_tracing(settings: Settings) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT, when set, needs the OpenTelemetry SDK installed."""
    if settings.otel_traces_endpoint:
        require_extra("otel")


def debug_wanted() -> bool:
    return (os.environ.get("UNIGATE_LOG_LEVEL") or "").lower() == "debug"


def check_log_level(settings: Settings) -> None:
    """UNIGATE_LOG_LEVEL and UNIGATE_LOG_FORMAT."""
    try:
        check_level(settings.log_level)
        check_format(settings.log_format)
    except ValueError as exc:
        raise StartupError(str(exc)) from None


def check_public_url(settings: Settings) -> None:
    """UNIGATE_PUBLIC_URL, when set, is a base URL links can be built on."""
    if settings.public_url is None:
        return
    from unigate.config import check_public_url as check

    try:
        check(settings.public_url)
    except ValueError as exc:
        raise StartupError(
            f"UNIGATE_PUBLIC_URL: {exc}; set it to the gateway's base URL as clients reach it, "
            "e.g. https://gw.example.com"
        ) from None


def check_port(host: str, port: int) -> None:
    """In range, and free: bound once here so a busy port is refused before anything starts."""
    if not 1 <= port <= 65535:
        raise StartupError(f"--port {port} is out of range; use a port from 1 to 65535")
    try:
        bind(host, port).close()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StartupError(
            f"cannot listen on {host}:{port}: {reason}; stop what holds the port, "
            "or pick another port with --port (or another address with --host)"
        ) from exc


def check_data_dir(data_dir: Path) -> None:
    """Created (0700) if missing, and writable (SQLite database, admin key and media files
    live there)."""
    fix = "set UNIGATE_DATA_DIR to a directory this user can write, or fix the permissions"
    try:
        # Owner-only (0700), the media directory inside too: they hold the database, the
        # admin key and webhook secrets. An existing wider one gets a warning (data_dir/owner_only.py).
        private_dir(data_dir, warn=False)
    except OSError as exc:
        raise StartupError(f"cannot create the data directory {data_dir}: {exc.strerror}; {fix}") from exc
    try:
        with tempfile.TemporaryFile(dir=data_dir):
            pass
        private_dir(data_dir / "media", warn=False)
    except OSError as exc:
        raise StartupError(f"cannot write to the data directory {data_dir}: {exc.strerror}; {fix}") from exc
    # Only a usable directory is worth a warning about who else can read it.
    warn_if_open(data_dir)
    warn_if_open(data_dir / "media")


def create_limits_table(data_dir: Path) -> None:
    """The table the workers share their limit counters in, allocated whole now: with no space
    for it a worker could not start (limits/shared_table.py)."""
    from unigate.limits.backend import counters_path
    from unigate.limits.shared_table import NoRoomForTable, SharedTable

    try:
        SharedTable(counters_path(data_dir)).close()
    except NoRoomForTable as exc:
        raise StartupError(
            f"cannot allocate the limits table ({exc.size / 1e6:.1f} MB) in the data directory "
            f"{data_dir}: {exc.reason}; free space on its filesystem, or set UNIGATE_DATA_DIR to a "
            "directory with room"
        ) from exc


def check_storage(config: StorageConfig, data_dir: Path) -> None:
    """An S3 store can be listed and written (the data dir's disk is checked above): a bucket
    that is missing, unreachable or read-only is refused now, not at the first upload."""
    if config.backend == "local":
        return
    require_extra("s3")
    from unigate.errors import StorageUnavailable
    from unigate.storage import build_storage
    from unigate.storage.s3 import reason

    where = f"s3://{config.bucket}" + (f" at {config.endpoint_url}" if config.endpoint_url else "")

    async def probe() -> None:
        async with asyncio.timeout(2 * CONNECT_TIMEOUT):
            await build_storage(config, data_dir).check()

    try:
        asyncio.run(probe())
        return
    except StorageUnavailable as exc:
        why = exc.detail
    except TimeoutError:
        why = f"no answer within {2 * CONNECT_TIMEOUT:.0f} s"
    except Exception as exc:  # the client refused the settings themselves
        why = reason(exc)
    raise StartupError(
        f"cannot use the storage bucket {where}: {why}; check that the bucket exists and "
        "storage.endpoint_url / storage.region in the config, and that AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY may list, read and write it"
    )


def check_redis(url: str | None) -> None:
    """UNIGATE_REDIS_URL: a Redis URL, or one start-up line; one that does not answer now is a
    warning, not a stop (limits fall back to each node's counters, changes still reach every
    replica through the database), so the line says what runs without it."""
    if not url:
        return
    require_extra("redis")
    from redis.asyncio import Redis

    shown = shown_redis_url(url)
    fix = "set it to redis://host:6379/0 (rediss:// for TLS), or unset it on a single node"
    try:
        client = Redis.from_url(url, socket_connect_timeout=2.0, socket_timeout=2.0)
    except ValueError as exc:
        reason = str(exc).replace(url, shown)
        raise StartupError(f"UNIGATE_REDIS_URL {shown} is not a Redis URL: {reason}; {fix}") from None

    async def ping() -> None:
        try:
            async with asyncio.timeout(3.0):
                await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except Exception as exc:
        why = "no answer within 3 s" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        logging.getLogger("unigate").warning(
            "UNIGATE_REDIS_URL %s does not answer (%s): starting anyway; until it does, limits use "
            "each node's own counters (limits.redis_down) and key changes reach other replicas "
            "through the database within a second. Check that Redis runs and the URL's host, port "
            "and password",
            shown,
            why.replace(url, shown),
        )


def shown_redis_url(url: str) -> str:
    """A Redis URL with its password masked, for messages."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(unparseable URL)"
    return url.replace(f":{password}@", ":***@") if password else url


def shown_url(url: str) -> str:
    """The database URL with its password masked, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(unparseable URL)"


def check_database_url(url: str) -> None:
    """A scheme the store supports (sqlite or postgresql)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    fix = "set UNIGATE_DATABASE_URL to sqlite:///path/to/file.db or postgresql://user:pass@host/db"
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError:
        raise StartupError(f"UNIGATE_DATABASE_URL is not a database URL; {fix}") from None
    if backend not in ("sqlite", "postgresql", "postgres"):
        raise StartupError(f"UNIGATE_DATABASE_URL has the unsupported scheme {backend}://; {fix}")
    if backend != "sqlite":
        require_extra("postgres")


def with_database(url: str, work: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    """Connect (bounded wait), migrate, then run `work(engine)`; connection failures become a
    StartupError that shows the URL without its password."""
    return asyncio.run(_with_database(url, work))


async def _with_database(url: str, work: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    from unigate.store import db

    check_database_url(url)
    engine = db.create_engine(url)
    try:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                async with engine.connect() as conn:
                    await db.ping(conn)
        except Exception as exc:
            raise StartupError(_unreachable(url, exc)) from exc
        await db.migrate(engine)
        return await work(engine)
    finally:
        await engine.dispose()


def _unreachable(url: str, exc: BaseException) -> str:
    from sqlalchemy.engine import make_url

    cause = exc.orig if hasattr(exc, "orig") and exc.orig is not None else exc
    reason = " ".join(str(cause).split()) or type(cause).__name__
    if isinstance(cause, TimeoutError):
        reason = f"no answer within {CONNECT_TIMEOUT:.0f} s"
    password = make_url(url).password
    if password:
        reason = reason.replace(str(password), "***")
    if make_url(url).get_backend_name() == "sqlite":
        fix = "check UNIGATE_DATA_DIR / UNIGATE_DATABASE_URL and the file's permissions"
    else:
        fix = "check that the server runs and that UNIGATE_DATABASE_URL names its host, user and database"
    return f"cannot connect to the database {shown_url(url)}: {reason}; {fix}"
