"""Logging setup. Log lines never carry keys: handlers log key ids, never headers or bodies."""

from __future__ import annotations

import logging
import sys
import time

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("debug", "info", "warning", "error")


def check_level(level: str) -> str:
    """`level` if it is one of LEVELS; a ValueError naming the accepted ones otherwise."""
    if level not in LEVELS:
        raise ValueError(f"UNIGATE_LOG_LEVEL={level!r} is not a log level; use one of {', '.join(LEVELS)}")
    return level


def configure_logging(level: str = "info") -> None:
    level = check_level(level.lower())
    root = logging.getLogger()
    if any(getattr(h, "_unigate", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler._unigate = True  # type: ignore[attr-defined]
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
    in the same FORMAT with the timestamp's date part made once per second; any other set-up
    (handlers or filters added by an embedding application or a test) gets a real LogRecord,
    so nothing is bypassed.
    """

    __slots__ = ("_logger", "_second", "_stamp", "_tail")

    def __init__(self, name: str) -> None:
        self._logger = logging.getLogger(name)
        self._tail = f" INFO {name}: "
        self._second = -1
        self._stamp = ""

    def enabled(self) -> bool:
        # Asked per line (a cached lookup) so a level changed at run time takes effect.
        return self._logger.isEnabledFor(logging.INFO)

    def __call__(self, line: str) -> None:
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
            with handler.lock:  # type: ignore[union-attr]  # always set by Handler.__init__
                handler.stream.write(text)
                handler.stream.flush()
            return
        # Built here rather than by `info()`, which would also walk the stack for the
        # caller's file and line.
        logger.handle(logger.makeRecord(logger.name, logging.INFO, "", 0, line, (), None))
