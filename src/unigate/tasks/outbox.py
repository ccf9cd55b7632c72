"""Webhook delivery from the persisted outbox: at least once, across restarts.

An event row is written in the same transaction as the change it reports; this loop leases
due rows, signs each per Standard Webhooks with the owner key's secret, POSTs it through the
SSRF-guarded sender, and either marks it delivered or schedules the next attempt. A 410
Gone ends the hook for that task (the receiver asked for no more events); an event the SSRF
guard refuses (its host's addresses are not public) is marked failed at once, since every
retry would be refused too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from unigate.background import Periodic
from unigate.store.db import is_outage
from unigate.store.keys import KeyStore
from unigate.tasks.outbox_store import Delivery
from unigate.tasks.store import TaskStore
from unigate.webhooks.sender import WebhookSender, backoff_schedule
from unigate.webhooks.signing import headers as signed_headers

if TYPE_CHECKING:
    from unigate.observability.metrics import Metrics

log = logging.getLogger("unigate.webhooks")


class OutboxDeliverer:
    def __init__(
        self,
        store: TaskStore,
        keys: KeyStore,
        sender: WebhookSender,
        schedule: Sequence[float],
        timeout: float,
        concurrency: int = 16,
        metrics: Metrics | None = None,
    ) -> None:
        self.metrics = metrics  # attempts by outcome
        self.store = store
        self.keys = keys
        self.sender = sender
        self.schedule = tuple(schedule)
        self.timeout = timeout
        self._slots = asyncio.Semaphore(concurrency)
        self._secrets: dict[str, str] = {}
        # Events the receiver accepted whose `delivered` mark a database outage stopped: written
        # at the next pass, before anything new is leased. Left to their lease, each would stay
        # pending for its lease, hold back its task's later events, and then be sent again.
        self._unmarked: set[str] = set()
        self._loop = Periodic("webhook-outbox", self._pass, 0.25, grace=timeout + 5)
        self._idle_delay = 0.25
        # Longer than two delivery timeouts: a delivery in flight is not sent twice, and one
        # a dead replica had leased is sent again soon after it could no longer be running.
        self._lease = 2 * timeout + 5

    async def start(self) -> None:
        await self.sender.start()
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        await self.sender.aclose()

    async def _pass(self) -> float:
        for event_id in list(self._unmarked):
            await self.store.delivered(event_id)  # raises while the database is still away
            self._unmarked.discard(event_id)
        batch = await self.store.lease_deliveries(64, self._lease)
        if batch:
            await asyncio.gather(*(self._deliver(d) for d in batch))
        # Idle: back off to 1 s; an event written meanwhile waits at most that long.
        self._idle_delay = 0.25 if batch else min(self._idle_delay * 2, 1.0)
        return 0.05 if len(batch) >= 64 else self._idle_delay

    async def _secret(self, key_id: str) -> str | None:
        secret = self._secrets.get(key_id)
        if secret is None:
            record = await self.keys.get(key_id)
            if record is None:
                return None
            secret = self._secrets[key_id] = record.webhook_secret
        return secret

    async def _deliver(self, event: Delivery) -> None:
        async with self._slots:
            secret = await self._secret(event.key_id)
            attempts = event.attempts + 1
            if secret is None:
                log.warning(
                    "webhook %s for task %s abandoned: its key no longer exists", event.id, event.task_id
                )
                self._count("abandoned")
                await self.store.give_up(event.id, attempts, "owner key no longer exists")
                return
            result = await self.sender.deliver(
                event.url, event.payload, signed_headers(secret, event.id, event.payload), self.timeout
            )
            if result.ok:
                self._count("delivered")
                try:
                    await self.store.delivered(event.id)
                except Exception as exc:
                    if not is_outage(exc):
                        raise
                    self._unmarked.add(event.id)
                    log.warning(
                        "webhook %s for task %s delivered, but the database is unavailable: marked "
                        "delivered once it is back",
                        event.id,
                        event.task_id,
                    )
                return
            if result.gone:
                self._count("gone")
                # 410 is the receiver's "stop": no retry, and no later event of this task.
                skipped = await self.store.hook_gone(event.id, event.task_id, attempts, result.error)
                log.warning(
                    "webhook %s for task %s: the endpoint answered 410 Gone; no further events "
                    "of this task are sent (%d pending event(s) skipped)",
                    event.id,
                    event.task_id,
                    skipped,
                )
                return
            if result.refused:
                self._count("abandoned")
                # Marked failed at once: the guard would refuse every retry the same way, for
                # days. The host, never the URL (receivers put tokens in query strings).
                log.warning(
                    "webhook %s for task %s to host %s refused by the SSRF guard, marked failed (not "
                    "retried): %s",
                    event.id,
                    event.task_id,
                    _host(event.url),
                    result.error,
                )
                await self.store.give_up(event.id, attempts, result.error)
                return
            delay = None if result.permanent else backoff_schedule(attempts, self.schedule)
            self._count("failed" if delay is not None else "abandoned")
            if delay is None:
                log.warning(
                    "webhook %s for task %s abandoned after %d attempt(s): %s",
                    event.id,
                    event.task_id,
                    attempts,
                    result.error,
                )
                await self.store.give_up(event.id, attempts, result.error)
                return
            delay = max(delay, result.retry_after or 0.0)
            due = time.time() + delay
            # The cause is one of the sender's fixed phrases; the URL is not logged (receivers
            # put tokens in query strings).
            log.warning(
                "webhook %s for task %s: attempt %d failed (%s); next attempt in %.1f s at %s",
                event.id,
                event.task_id,
                attempts,
                result.error,
                delay,
                datetime.fromtimestamp(due, UTC).isoformat(timespec="seconds"),
            )
            await self.store.retry_later(event.id, attempts, due, result.error)

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.webhooks.inc((outcome,))


def _host(url: str) -> str:
    """The host of a webhook URL, for a log line (the rest of the URL may hold a token)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:  # an IPv6 literal that does not parse
        host = None
    return host[:253] if host else "(none)"
