"""The webhook outbox's persistence: events written with the change they report, leased
for delivery (per task, oldest first), and their outcome. A 410 Gone from a receiver ends
the hook for that task: the event is marked `gone`, every later event of the task
`skipped`, and events the task produces afterwards are written as `skipped` too."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.schema import tasks, webhook_outbox

# Event states: pending -> delivered | failed | gone; skipped = never sent (hook gone).
GONE_ERROR = "not sent: the endpoint answered 410 Gone to an earlier event of this task"


@dataclass(slots=True)
class OutboxEvent:
    id: str
    task_id: str
    key_id: str
    url: str
    payload: bytes


@dataclass(slots=True)
class Delivery:
    id: str
    task_id: str
    key_id: str
    url: str
    payload: bytes
    attempts: int


def event_values(event: OutboxEvent, now: float, *, skipped: bool = False) -> dict[str, Any]:
    return {
        "id": event.id,
        "task_id": event.task_id,
        "key_id": event.key_id,
        "url": event.url,
        "payload": event.payload.decode(),
        "state": "skipped" if skipped else "pending",
        "attempts": 0,
        "next_attempt_at": now,
        "lease_until": 0.0,
        "last_error": GONE_ERROR if skipped else "",
        "created_at": now,
        "delivered_at": None,
    }


async def insert_events(
    conn: AsyncConnection, task_id: str, events: Sequence[OutboxEvent], now: float
) -> None:
    """Write a task's new events inside the caller's transaction; a task whose hook is gone
    gets them recorded as skipped, never sent. The caller has already updated the task row,
    which on PostgreSQL holds the row lock `hook_gone` also takes, so the two never interleave."""
    if not events:
        return
    o = webhook_outbox.c
    gone = (
        await conn.execute(sa.select(o.id).where(o.task_id == task_id, o.state == "gone").limit(1))
    ).first() is not None
    await conn.execute(webhook_outbox.insert(), [event_values(e, now, skipped=gone) for e in events])


class OutboxStore:
    """Mixed into `TaskStore`: the outbox shares its engine."""

    engine: AsyncEngine
    _postgres: bool

    async def lease_deliveries(self, limit: int, lease_seconds: float) -> list[Delivery]:
        now = time.time()
        o = webhook_outbox.c
        earlier = webhook_outbox.alias("earlier")
        # Per task, only the oldest undelivered event is due: a receiver sees a task's
        # status changes in order even when an earlier delivery needed retries.
        blocked = (
            sa.select(earlier.c.id)
            .where(
                earlier.c.task_id == o.task_id,
                earlier.c.state == "pending",
                sa.tuple_(earlier.c.created_at, earlier.c.id) < sa.tuple_(o.created_at, o.id),
            )
            .exists()
        )
        due = (
            sa.select(o.id)
            .where(o.state == "pending", o.next_attempt_at <= now, o.lease_until < now, ~blocked)
            .order_by(o.created_at)
            .limit(limit)
        )
        if self._postgres:
            due = due.with_for_update(skip_locked=True)
        stmt = (
            webhook_outbox.update()
            .where(o.id.in_(due.scalar_subquery()))
            .values(lease_until=now + lease_seconds)
            .returning(o.id, o.task_id, o.key_id, o.url, o.payload, o.attempts, o.created_at)
        )
        async with self.engine.begin() as conn:
            rows = sorted((await conn.execute(stmt)).all(), key=lambda r: r.created_at)
        return [Delivery(r.id, r.task_id, r.key_id, r.url, r.payload.encode(), r.attempts) for r in rows]

    async def delivered(self, event_id: str) -> None:
        await self._update_event(event_id, state="delivered", delivered_at=time.time(), lease_until=0.0)

    async def retry_later(self, event_id: str, attempts: int, at: float, error: str) -> None:
        await self._update_event(
            event_id, attempts=attempts, next_attempt_at=at, last_error=error[:500], lease_until=0.0
        )

    async def give_up(self, event_id: str, attempts: int, error: str) -> None:
        await self._update_event(
            event_id, state="failed", attempts=attempts, last_error=error[:500], lease_until=0.0
        )

    async def hook_gone(self, event_id: str, task_id: str, attempts: int, error: str) -> int:
        """The receiver answered 410 Gone: mark this event `gone` and every pending event of
        the task `skipped`, in one transaction; returns how many were skipped."""
        o = webhook_outbox.c
        async with self.engine.begin() as conn:
            if self._postgres:
                # Serialises with `transition`, which updates this row before writing events.
                await conn.execute(sa.select(tasks.c.id).where(tasks.c.id == task_id).with_for_update())
            await conn.execute(
                webhook_outbox.update()
                .where(o.id == event_id)
                .values(state="gone", attempts=attempts, last_error=error[:500], lease_until=0.0)
            )
            skipped = await conn.execute(
                webhook_outbox.update()
                .where(o.task_id == task_id, o.state == "pending")
                .values(state="skipped", last_error=GONE_ERROR, lease_until=0.0)
            )
        return int(skipped.rowcount or 0)

    async def _update_event(self, event_id: str, **values: Any) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                webhook_outbox.update().where(webhook_outbox.c.id == event_id).values(**values)
            )

    async def events_for(self, task_id: str) -> list[dict[str, Any]]:
        """Delivery state of a task's events, for the admin API."""
        o = webhook_outbox.c
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(o.id, o.state, o.attempts, o.last_error, o.created_at, o.delivered_at)
                    .where(o.task_id == task_id)
                    .order_by(o.created_at)
                )
            ).all()
        return [
            {
                "id": r.id,
                "state": r.state,
                "attempts": r.attempts,
                "last_error": r.last_error,
                "created_at": r.created_at,
                "delivered_at": r.delivered_at,
            }
            for r in rows
        ]


def hook_state(events: Sequence[dict[str, Any]]) -> str:
    """One word for a task's webhook, for the admin API: none, gone (a 410 ended it), or
    active."""
    if not events:
        return "none"
    return "gone" if any(e["state"] == "gone" for e in events) else "active"
