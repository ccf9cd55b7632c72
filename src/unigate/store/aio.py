"""The asyncio face of SQLAlchemy Core that the store uses: an engine whose connections run
statements on the async drivers (aiosqlite, asyncpg) through SQLAlchemy's greenlet bridge.

SQLAlchemy's asyncio extension (`sqlalchemy.ext.asyncio`) does the same and more, but importing
it loads its ORM session layer with it (~40 modules, ~6 MB in every worker) that the gateway,
which uses Core only, never calls. This is the part of it the store calls, with the same
behaviour: a connection's close on leaving its block runs to completion even when the task is
cancelled (a connection half given back could be returned to a pool already disposed of), and
a transaction block commits when it ends normally and rolls back when it raises.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar, TypeVarTuple, overload

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, CursorResult, Dialect, Engine, RootTransaction
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.selectable import TypedReturnsRows
from sqlalchemy.util.concurrency import greenlet_spawn

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def create_async_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An engine for an async driver URL (`sqlite+aiosqlite`, `postgresql+asyncpg`)."""
    return AsyncEngine(sa.create_engine(url, _is_async=True, **kwargs))


class AsyncEngine:
    def __init__(self, sync_engine: Engine) -> None:
        self.sync_engine = sync_engine  # its events (`sa.event.listen`) apply to these connections

    @property
    def dialect(self) -> Dialect:
        return self.sync_engine.dialect

    @property
    def url(self) -> URL:
        return self.sync_engine.url

    def connect(self) -> AsyncConnection:
        """A connection, taken from the pool when its `async with` block is entered."""
        return AsyncConnection(self)

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction, committed when the block ends (rolled back on error)."""
        async with self.connect() as conn, conn.begin():
            yield conn

    async def dispose(self, close: bool = True) -> None:
        await greenlet_spawn(self.sync_engine.dispose, close=close)


class AsyncConnection:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._sync: Connection | None = None

    async def start(self) -> AsyncConnection:
        if self._sync is not None:
            raise InvalidRequestError("connection is already started")
        self._sync = await greenlet_spawn(self.engine.sync_engine.connect)
        return self

    async def __aenter__(self) -> AsyncConnection:
        return await self.start()

    async def __aexit__(self, *_exc: object) -> None:
        await _run_to_completion(self.close())

    @property
    def sync_connection(self) -> Connection:
        if self._sync is None:
            raise InvalidRequestError("connection is not started: use `async with engine.connect()`")
        return self._sync

    @property
    def dialect(self) -> Dialect:
        return self.engine.dialect

    def begin(self) -> AsyncTransaction:
        return AsyncTransaction(self)

    async def close(self) -> None:
        if self._sync is not None:
            await greenlet_spawn(self._sync.close)

    @overload
    async def execute(
        self, statement: TypedReturnsRows[*Ts], parameters: Any = None
    ) -> CursorResult[*Ts]: ...

    @overload
    async def execute(
        self, statement: Executable, parameters: Any = None
    ) -> CursorResult[*tuple[Any, ...]]: ...

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[*tuple[Any, ...]]:
        """Run `statement`; the result is buffered (the store streams no result sets)."""
        return await greenlet_spawn(self.sync_connection.execute, statement, parameters)

    @overload
    async def scalar(self, statement: TypedReturnsRows[T], parameters: Any = None) -> T | None: ...

    @overload
    async def scalar(self, statement: Executable, parameters: Any = None) -> Any: ...

    async def scalar(self, statement: Executable, parameters: Any = None) -> Any:
        return (await self.execute(statement, parameters)).scalar()

    async def exec_driver_sql(self, statement: str, parameters: Any = None) -> CursorResult[Any]:
        return await greenlet_spawn(self.sync_connection.exec_driver_sql, statement, parameters)

    async def run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(sync_connection, *args, **kwargs)`, for synchronous APIs (Alembic, `sa.inspect`)."""
        return await greenlet_spawn(fn, self.sync_connection, *args, **kwargs)


class AsyncTransaction:
    def __init__(self, connection: AsyncConnection) -> None:
        self.connection = connection
        self._sync: RootTransaction | None = None

    async def __aenter__(self) -> AsyncTransaction:
        self._sync = await greenlet_spawn(self.connection.sync_connection.begin)
        self._sync.__enter__()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._sync is not None
        # Commits, or rolls back when the block raised (SQLAlchemy's own rules for a block).
        await greenlet_spawn(self._sync.__exit__, exc_type, exc, tb)


async def _run_to_completion(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` in a task of its own and wait for it to finish even if the caller is cancelled
    meanwhile; the cancellation is raised once it has."""
    task = asyncio.ensure_future(coro)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as err:
            if task.done():
                raise
            cancelled = err
        else:
            break
    if cancelled is not None:
        raise cancelled
    return result
