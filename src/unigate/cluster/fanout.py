"""Fan-out of changes: every worker of every replica applies each row of the change feed
(store/changes.py) — drops a changed key from its cache, re-reads its config file for a reload
asked for elsewhere — within a second of the change.

How a worker learns of a row:
- Redis (`UNIGATE_REDIS_URL`): the writer publishes the row's seq after its commit
  (channel.py); every subscribed worker reads the feed at once. Milliseconds.
- The database, as the safety net for a message that never arrived (a publish that failed, a
  subscriber between reconnects): the feed is read every `SUBSCRIBED_CHECK` seconds while the
  subscription is up, and every `ALONE_CHECK` seconds while it is down or when there is no
  Redis at all (one node, or separate serves on one database): then the database is the only
  path, and half a second keeps revocations within a second. After every (re)subscription the
  feed is read at once: messages may have been missed while away.

Each read is one range read on the feed's primary key, empty almost every time; the request
path never waits on any of this (the key cache is read locally, only evictions come from here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from unigate.store import changes
from unigate.store.changes import Change, ChangeFeed

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from unigate.cluster.channel import RedisChannel

log = logging.getLogger("unigate.fanout")

ALONE_CHECK = 0.5  # seconds between feed reads without a working Redis subscription
SUBSCRIBED_CHECK = 5.0  # with one: the bound on a change whose message was lost
STOP_GRACE = 10.0

Handler = Callable[[Change], None]


class Fanout:
    """One per worker. `listen` registers what a kind of change does here; `announce` tells the
    others about a row this worker wrote; `announce_reload` writes and announces a reload."""

    def __init__(self, feed: ChangeFeed, origin: str) -> None:
        self.origin = origin
        self._feed = feed
        self._channel: RedisChannel | None = None
        self._handlers: dict[str, Handler] = {}
        self._seq = 0  # the newest feed row applied here
        self._subscribed = False
        self._wake = asyncio.Event()
        self._why = "database check"  # what woke the checker: named in the log lines
        self._stopping = asyncio.Event()
        self._feed_failing = False
        self._checker: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None

    def listen(self, kind: str, handler: Handler) -> None:
        """`handler` runs on the event loop for each such row from the feed; it must not block
        (one that has slow work to do starts a task)."""
        self._handlers[kind] = handler

    @property
    def subscribed(self) -> bool:
        return self._subscribed

    def check_interval(self) -> float:
        return SUBSCRIBED_CHECK if self._subscribed else ALONE_CHECK

    async def start(self, redis: Redis | None) -> None:
        """Start reading the feed, and with `redis` (the gateway's client) subscribe to it."""
        self._seq = await self._feed.latest()
        self._stopping.clear()
        if redis is not None:
            from unigate.cluster.channel import RedisChannel  # a single node never imports redis

            self._channel = RedisChannel(redis)
        self._checker = asyncio.create_task(self._check_loop(), name="fanout-check")
        if self._channel is not None:
            self._listener = asyncio.create_task(
                self._channel.listen(self._on_message, self._on_state), name="fanout-listen"
            )

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._listener is not None:
            self._listener.cancel()  # it only waits on Redis: nothing to leave half done
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._checker is not None:
            # Not cancelled mid-read (see background.py): it ends after its current read.
            try:
                await asyncio.wait_for(asyncio.shield(self._checker), STOP_GRACE)
            except TimeoutError:
                self._checker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._checker
            self._checker = None

    async def announce(self, seq: int) -> None:
        """Tell every other worker that feed row `seq` exists. Never raises: when Redis cannot
        take the message, the others find the row at their next database check."""
        if self._channel is None:
            return
        try:
            await self._channel.publish(seq, self.origin)
        except Exception as exc:  # RedisError, OSError, TimeoutError: the safety net covers it
            log.warning(
                "fan-out: change %d not published to Redis (%s: %s); the other processes apply it at "
                "their next database check (within %.0f s)",
                seq,
                type(exc).__name__,
                exc,
                SUBSCRIBED_CHECK,
            )

    async def announce_reload(self) -> None:
        """Ask every other worker of every replica to re-read its config file. Never raises."""
        try:
            seq = await self._feed.add(changes.CONFIG, self.origin)
        except Exception as exc:  # database unreachable: only this worker reloaded
            log.error(
                "fan-out: could not record the config reload for the other processes (%s: %s); "
                "this worker reloaded; reload the others with POST /admin/reload again or SIGHUP",
                type(exc).__name__,
                exc,
            )
            return
        await self.announce(seq)

    async def check(self, why: str = "database check") -> None:
        """Read the feed after the last row applied here and apply what it holds."""
        found = await self._feed.since(self._seq)
        reload: Change | None = None
        for change in found:
            self._seq = change.seq
            if change.kind == changes.CONFIG:
                if change.origin != self.origin:
                    reload = change  # several pending reloads are one re-read of the file
                continue
            handler = self._handlers.get(change.kind)
            if handler is None:
                continue  # a kind a newer version writes: not ours to apply
            handler(change)
            if change.origin != self.origin:
                log.info(
                    "fan-out: key %s changed by %s (change %d, via %s): cached copy dropped",
                    change.key_id,
                    change.origin,
                    change.seq,
                    why,
                )
        if reload is not None and (handler := self._handlers.get(changes.CONFIG)) is not None:
            log.info("fan-out: config reload asked by %s (change %d, via %s)", reload.origin, reload.seq, why)
            handler(reload)

    # -- loops --

    async def _check_loop(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.check_interval())
            if self._stopping.is_set():
                return
            why = self._why if self._wake.is_set() else "database check"
            self._wake.clear()
            self._why = "database check"
            try:
                await self.check(why)
            except Exception as exc:  # the database is down or restarting: try again next round
                if not self._feed_failing:
                    log.warning(
                        "fan-out: change feed unreadable (%s: %s); retrying every %.1f s",
                        type(exc).__name__,
                        exc,
                        self.check_interval(),
                    )
                self._feed_failing = True
                continue
            if self._feed_failing:
                log.info("fan-out: change feed readable again; changes made meanwhile applied")
                self._feed_failing = False

    def _on_message(self, seq: int, origin: str) -> None:
        if seq > self._seq:  # else already read here (this worker's own change, a repeat)
            self._wake_for("redis")

    def _on_state(self, subscribed: bool, why: str) -> None:
        was = self._subscribed
        self._subscribed = subscribed
        if subscribed:
            if was:
                return
            log.info("fan-out: subscribed to Redis; reading the change feed for anything missed")
            self._wake_for("resubscription")  # messages sent while away are gone: read the feed
        elif was:
            log.warning(
                "fan-out: Redis subscription lost (%s); reconnecting, and reading the change feed "
                "every %.1f s until it is back",
                why,
                ALONE_CHECK,
            )
            # The checker may be in a 5-second wait: cut it short so the shorter interval
            # applies from now on.
            self._wake_for("database check")

    def _wake_for(self, why: str) -> None:
        if not self._wake.is_set():
            self._why = why
        self._wake.set()
