"""Logging setup. Log lines never carry keys: handlers log key ids, never headers or bodies.

Two formats (UNIGATE_LOG_FORMAT): `text`, one line per record as FORMAT says, and `json`,
one JSON object per line with `ts` (UTC, ISO 8601), `level`, `logger` and `message`, plus a
record's `fields` (the access line's request_id, key_id, method, ...) and `exception` (a
traceback) when it has them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")


def check_level(level: str) -> str:
    """`level` if it is one of LEVELS; a ValueError naming the accepted ones otherwise."""
    if level not in LEVELS:
        raise ValueError(f"UNIGATE_LOG_LEVEL={level!r} is not a log level; use one of {', '.join(LEVELS)}")
    return level


def check_format(fmt: str) -> str:
    """`fmt` if it is one of FORMATS; a ValueError naming them otherwise."""
    if fmt not in FORMATS:
        raise ValueError(f"UNIGATE_LOG_FORMAT={fmt!r} is not a log format; use one of {', '.join(FORMATS)}")
    return fmt


class JsonFormatter(logging.Formatter):
    """A record as one JSON object on one line (newlines in a message or a traceback are
    escaped inside the JSON string)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": _utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if fields:
            data.update(fields)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(data, default=str).decode()


def _later(flush: Callable[[], None], delay: float) -> None:
    """`flush` after `delay` seconds (0: at the end of this loop turn); at once with no
    running loop (a command-line tool)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        flush()
        return
    if delay:
        loop.call_later(delay, flush)
    else:
        loop.call_soon(flush)


def _utc(created: float) -> str:
    second = int(created)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)) + f".{int((created - second) * 1000):03d}Z"


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    level = check_level(level.lower())
    fmt = check_format(fmt.lower())
    root = logging.getLogger()
    if any(getattr(h, "_unigate", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(FORMAT))
    handler._unigate = fmt  # type: ignore[attr-defined]  # the format InfoLines writes in
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Third-party debug output carries secrets: SQL parameters (key hashes, webhook secrets)
    # from the database drivers, URLs with query-string credentials from aiohttp. Our own
    # loggers follow `level`; these never go below WARNING.
    for name in ("aiosqlite", "sqlalchemy", "asyncpg", "aiohttp", "alembic", "uvicorn.access"):
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


class InfoLines:
    """Info lines for one logger (the access log) at a fraction of `Logger.info`'s cost.

    Through a LogRecord (process and thread lookups, a strftime per line) the line cost ~32 µs
    per request in bench/overhead.py, more than the gateway's own work; written here, ~11 µs.
    When unigate's handler is the only one in the way, the line goes to its stream directly,
    in the handler's format (FORMAT, or one JSON object) with the timestamp's date part made
    once per second; any other set-up (handlers or filters added by an embedding application
    or a test) gets a real LogRecord, so nothing is bypassed.

    Direct lines are written in batches: a line waits up to `HOLD` seconds for the lines of
    the requests that finish after it, and they go out in one write, so a busy worker pays one
    system call per `HOLD` rather than one per loop turn (a write cost ~3 µs of every request
    served at 32 connections, a few requests a turn). Past `MAX_PENDING` lines, or with no
    running loop, they are written at once; `flush` writes what is pending (at shutdown). Lines
    that pass through other handlers are handed over at the end of their loop turn.
    """

    MAX_PENDING = 512
    # Seconds a direct line may wait: unnoticeable to a reader of the log; what a killed
    # process (SIGKILL, out of memory) can lose; ~100 requests' lines per write at 5,000 a second.
    HOLD = 0.02

    __slots__ = (
        "_handler",
        "_logger",
        "_name",
        "_pending",
        "_second",
        "_stamp",
        "_tail",
        "_utc_second",
        "_utc_stamp",
    )

    def __init__(self, name: str) -> None:
        self._logger = logging.getLogger(name)
        self._name = name
        self._tail = f" INFO {name}: "
        self._second = -1
        self._stamp = ""
        self._utc_second = -1
        self._utc_stamp = ""
        self._pending: list[str] = []
        self._handler: logging.StreamHandler[Any] | None = None  # where the pending lines go

    def enabled(self) -> bool:
        # Asked per line (a cached lookup) so a level changed at run time takes effect.
        return self._logger.isEnabledFor(logging.INFO)

    def enabled_check(self) -> Callable[[], bool]:
        """`enabled` as one call fewer: the logger's own check, bound to INFO."""
        return functools.partial(self._logger.isEnabledFor, logging.INFO)

    def _direct(self) -> logging.StreamHandler[Any] | None:
        """unigate's handler when nothing else is in the way, else None."""
        logger = self._logger
        handlers = logging.root.handlers
        handler = handlers[0] if len(handlers) == 1 else None
        if (
            isinstance(handler, logging.StreamHandler)
            and getattr(handler, "_unigate", False)
            and handler.level <= logging.INFO
            and not handler.filters
            and not logger.handlers
            and not logger.filters
            and logger.propagate
        ):
            return handler
        return None

    def _write(self, handler: logging.StreamHandler[Any], text: str) -> None:
        pending = self._pending
        if pending and handler is not self._handler:
            self.flush()  # the handler was replaced: earlier lines go where they were meant to
        pending.append(text)
        if len(pending) == 1:
            self._handler = handler
            _later(self.flush, self.HOLD)
        elif len(pending) >= self.MAX_PENDING:
            self.flush()

    def schedule(self, flush: Callable[[], None]) -> None:
        """Have `flush` called when lines made now are due: `HOLD` seconds on when they go to
        unigate's stream directly, at the end of this loop turn when they pass through other
        handlers (an application's or a test's, which expect records as they happen)."""
        _later(flush, self.HOLD if self._direct() is not None else 0.0)

    def flush(self) -> None:
        """Write the pending lines in one write."""
        pending, handler = self._pending, self._handler
        if not pending or handler is None:
            return
        text = "".join(pending)
        pending.clear()
        with handler.lock:  # type: ignore[union-attr]  # always set by Handler.__init__
            handler.stream.write(text)
            handler.stream.flush()

    def __call__(self, line: str) -> None:
        # `_direct`'s test written out: this is the text format's per-request path.
        logger = self._logger
        handlers = logging.root.handlers
        handler = handlers[0] if len(handlers) == 1 else None
        if (
            isinstance(handler, logging.StreamHandler)
            and getattr(handler, "_unigate", False)
            and handler.level <= logging.INFO
            and not handler.filters
            and not logger.handlers
            and not logger.filters
            and logger.propagate
        ):
            now = time.time()
            second = int(now)
            if second != self._second:
                self._second = second
                self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
            text = f"{self._stamp},{int((now - second) * 1000):03d}{self._tail}{line}\n"
            pending = self._pending
            if pending and handler is self._handler and len(pending) < self.MAX_PENDING - 1:
                pending.append(text)  # `_write`'s common case, without its call
                return
            self._write(handler, text)
            return
        self._handle(line, None)

    def write_all(self, lines: list[str]) -> None:
        """`self(line)` for each of `lines`, written now in one write: the handler is looked
        at, the time read and the timestamp made once for them all."""
        handler = self._direct()
        if handler is None:
            for line in lines:
                self._handle(line, None)
            return
        if self._pending:
            self.flush()  # lines held from before go first
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        head = f"{self._stamp},{int((now - second) * 1000):03d}{self._tail}"
        text = head + f"\n{head}".join(lines) + "\n"
        with handler.lock:  # type: ignore[union-attr]  # always set by Handler.__init__
            handler.stream.write(text)
            handler.stream.flush()

    def record(self, message: str, fields: dict[str, Any]) -> None:
        """A line with structured fields: one JSON object (`message` and `fields` beside
        the usual keys) from unigate's JSON handler, a record carrying `fields` otherwise."""
        handler = self._direct()
        if handler is not None and getattr(handler, "_unigate", None) == "json":
            now = time.time()
            second = int(now)
            if second != self._utc_second:
                self._utc_second = second
                self._utc_stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            stamp = f"{self._utc_stamp}.{int((now - second) * 1000):03d}Z"
            data = {"ts": stamp, "level": "info", "logger": self._name, "message": message, **fields}
            self._write(handler, orjson.dumps(data).decode() + "\n")
            return
        self._handle(message, fields)

    def _handle(self, message: str, fields: dict[str, Any] | None) -> None:
        self.flush()  # a line through a record comes after the batched ones before it
        # Built here rather than by `info()`, which would also walk the stack for the
        # caller's file and line.
        logger = self._logger
        record = logger.makeRecord(logger.name, logging.INFO, "", 0, message, (), None)
        if fields is not None:
            record.fields = fields
        logger.handle(record)
