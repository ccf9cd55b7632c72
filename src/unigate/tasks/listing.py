"""The admin list of tasks, newest first, each with its webhook delivery state: two queries
(the tasks, then their events' states counted per task), whatever the page size."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.schema import tasks, webhook_outbox
from unigate.tasks.model import FAILURE, IN_PROGRESS, QUEUED, SUBMITTED, SUCCESS

STATUSES = ("NOT_START", SUBMITTED, QUEUED, IN_PROGRESS, SUCCESS, FAILURE)


async def list_tasks(
    engine: AsyncEngine, *, limit: int, status: str | None = None, key_id: str | None = None
) -> list[dict[str, Any]]:
    t = tasks.c
    query = (
        sa.select(
            t.id, t.key_id, t.family, t.action, t.model, t.provider, t.status, t.progress,
            t.fail_reason, t.price, t.created_at, t.updated_at,
        )
        .order_by(t.created_at.desc(), t.id.desc())
        .limit(limit)
    )  # fmt: skip
    if status is not None:
        query = query.where(t.status == status)
    if key_id is not None:
        query = query.where(t.key_id == key_id)
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).all()
        states = await _event_states(conn, [r.id for r in rows])
    return [
        {
            "id": r.id,
            "key_id": r.key_id,
            "family": r.family,
            "action": r.action,
            "model": r.model,
            "provider": r.provider,
            "status": r.status,
            "progress": r.progress,
            "fail_reason": r.fail_reason,
            "price": r.price,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            **_webhook(states.get(r.id, {})),
        }
        for r in rows
    ]


async def _event_states(conn: AsyncConnection, ids: list[str]) -> dict[str, dict[str, int]]:
    if not ids:
        return {}
    o = webhook_outbox.c
    query = (
        sa.select(o.task_id, o.state, sa.func.count()).where(o.task_id.in_(ids)).group_by(o.task_id, o.state)
    )
    found: dict[str, dict[str, int]] = {}
    for task_id, state, count in (await conn.execute(query)).all():
        found.setdefault(task_id, {})[state] = int(count)
    return found


def _webhook(counts: dict[str, int]) -> dict[str, Any]:
    """`webhook`: the word `GET /admin/tasks/{id}` answers (none, active, or gone: a 410
    ended it). `webhook_delivery`: failed (an event ran out of retries), pending (events still
    to deliver), delivered (all of them), or null without events. `webhook_events`: events
    per state."""
    if not counts:
        return {"webhook": "none", "webhook_delivery": None, "webhook_events": {}}
    if counts.get("failed"):
        delivery = "failed"
    elif counts.get("pending"):
        delivery = "pending"
    else:
        delivery = "delivered" if counts.get("delivered") else "skipped"
    return {
        "webhook": "gone" if counts.get("gone") else "active",
        "webhook_delivery": delivery,
        "webhook_events": counts,
    }
