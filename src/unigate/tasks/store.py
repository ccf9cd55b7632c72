"""Task persistence: inserts (batched by `GroupCommit`), owner-scoped reads, leases for the
poller, compare-and-set transitions that write the refund and the webhook events in the same
transaction. The outbox's own queries are in `outbox_store.py`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from unigate.store.aio import AsyncEngine
from unigate.store.schema import billing_ledger, task_clips, tasks, webhook_outbox
from unigate.store.sqlite_reader import SQLiteReader, compile_select, sqlite_path
from unigate.tasks.idempotency import Claim, complete, forget_task
from unigate.tasks.model import TERMINAL, Task
from unigate.tasks.outbox_store import OutboxEvent, OutboxStore, event_values, insert_events


@dataclass(slots=True)
class NewTask:
    """Everything one submit writes, in one transaction."""

    task: Task
    clips: list[tuple[str, str | None]]  # (public clip id, upstream clip id or None)
    events: list[OutboxEvent]
    claim: Claim | None = None  # the Idempotency-Key this task answers, recorded with it


def _task_values(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "key_id": task.key_id,
        "family": task.family,
        "action": task.action,
        "model": task.model,
        "provider": task.provider,
        "upstream_id": task.upstream_id,
        "status": task.status,
        "progress": task.progress,
        "fail_reason": task.fail_reason,
        "submit_time": task.submit_time,
        "start_time": task.start_time,
        "finish_time": task.finish_time,
        "notify_hook": task.notify_hook,
        "request": orjson.dumps(task.request).decode(),
        "result": orjson.dumps(task.result).decode(),
        "clip_ids": orjson.dumps(task.clip_ids).decode(),
        "public_base": task.public_base,
        "price": task.price,
        "version": task.version,
        "poll_attempts": task.poll_attempts,
        "next_poll_at": task.next_poll_at,
        "lease_owner": None,
        "lease_until": 0.0,
        "deadline_at": task.deadline_at,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "external_id": task.external_id,
    }


def row_task(row: Any) -> Task:
    return Task(
        id=row.id,
        key_id=row.key_id,
        family=row.family,
        action=row.action,
        model=row.model,
        provider=row.provider,
        upstream_id=row.upstream_id,
        status=row.status,
        progress=row.progress,
        fail_reason=row.fail_reason,
        submit_time=row.submit_time,
        start_time=row.start_time,
        finish_time=row.finish_time,
        notify_hook=row.notify_hook,
        request=orjson.loads(row.request),
        result=orjson.loads(row.result),
        public_base=row.public_base,
        price=row.price,
        version=row.version,
        poll_attempts=row.poll_attempts,
        next_poll_at=row.next_poll_at,
        deadline_at=row.deadline_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        clip_ids=orjson.loads(row.clip_ids),
        external_id=row.external_id,
    )


class TaskStore(OutboxStore):
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._postgres = engine.dialect.name == "postgresql"
        self._sqlite_path = sqlite_path(engine.url.render_as_string(hide_password=False))
        self._reader: SQLiteReader | None = None
        self._select_tasks = compile_select(tasks.select())
        self._sql_get = self._select_tasks + " WHERE tasks.id = ?"
        self._select_clip = compile_select(
            task_clips.select().where(task_clips.c.clip_id == sa.bindparam("c"))
        )

    @property
    def reader(self) -> SQLiteReader | None:
        """The on-loop reader for SQLite (fetches are the hot path of async families)."""
        if self._reader is None and self._sqlite_path is not None:
            self._reader = SQLiteReader(self._sqlite_path)
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # --- writes at submit -------------------------------------------------------------

    async def insert_batch(self, items: Sequence[NewTask]) -> None:
        """Insert several submitted tasks with their clips, reservations and first events."""
        now = time.time()
        task_rows: list[dict[str, Any]] = []
        clip_rows: list[dict[str, Any]] = []
        ledger_rows: list[dict[str, Any]] = []
        event_rows: list[dict[str, Any]] = []
        for item in items:
            t = item.task
            task_rows.append(_task_values(t))
            for position, (clip_id, upstream_clip) in enumerate(item.clips):
                clip_rows.append(
                    {
                        "clip_id": clip_id,
                        "task_id": t.id,
                        "key_id": t.key_id,
                        "position": position,
                        "provider": t.provider,
                        "upstream_clip_id": upstream_clip,
                    }
                )
            if t.price > 0:
                ledger_rows.append(
                    {
                        "key_id": t.key_id,
                        "task_id": t.id,
                        "kind": "reserve",
                        "amount": t.price,
                        "created_at": now,
                    }
                )
            event_rows.extend(event_values(e, now) for e in item.events)
        async with self.engine.begin() as conn:
            await conn.execute(tasks.insert(), task_rows)
            if clip_rows:
                await conn.execute(task_clips.insert(), clip_rows)
            if ledger_rows:
                await conn.execute(billing_ledger.insert(), ledger_rows)
            if event_rows:
                await conn.execute(webhook_outbox.insert(), event_rows)
            for item in items:
                if item.claim is not None:
                    await complete(conn, item.claim, item.task.id)

    # --- reads ------------------------------------------------------------------------

    async def get(self, task_id: str) -> Task | None:
        row = await self.get_row(task_id)
        return row_task(row) if row is not None else None

    async def get_row(self, task_id: str) -> Any | None:
        """The raw row (attribute access by column name), for callers that may not need a
        whole `Task` (a fetch whose rendering is cached for this version)."""
        reader = self.reader
        if reader is not None:
            return reader.one(self._sql_get, (task_id,))
        async with self.engine.connect() as conn:
            return (await conn.execute(tasks.select().where(tasks.c.id == task_id))).first()

    async def get_many(self, ids: Sequence[str], key_id: str) -> list[Task]:
        if not ids:
            return []
        unique = list(dict.fromkeys(ids))
        # By primary key only: with the owner in the WHERE clause SQLite prefers the owner
        # index and scans every task of that key. Ownership is filtered here instead.
        reader = self.reader
        if reader is not None:
            sql = f"{self._select_tasks} WHERE tasks.id IN ({', '.join('?' * len(unique))})"
            rows: Sequence[Any] = reader.all(sql, unique)
        else:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(tasks.select().where(tasks.c.id.in_(unique)))).all()
        by_id = {r.id: row_task(r) for r in rows if r.key_id == key_id}
        return [by_id[i] for i in unique if i in by_id]

    async def by_external_id(self, key_id: str, family: str, external_id: str) -> Task | None:
        """The caller's task of `family` that the client named `external_id`."""
        stmt = tasks.select().where(
            tasks.c.key_id == key_id, tasks.c.external_id == external_id, tasks.c.family == family
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt.order_by(tasks.c.created_at.desc()).limit(1))).first()
        return row_task(row) if row is not None else None

    async def page(
        self, key_id: str, family: str, *, after: str | None, limit: int, newest_first: bool
    ) -> tuple[list[Task], bool]:
        """One page of the caller's tasks of `family` in creation order, starting after the
        task `after` (a cursor the client got from the previous page); (tasks, more follow)."""
        order = (
            (tasks.c.created_at.desc(), tasks.c.id.desc())
            if newest_first
            else (tasks.c.created_at.asc(), tasks.c.id.asc())
        )
        stmt = tasks.select().where(tasks.c.key_id == key_id, tasks.c.family == family)
        async with self.engine.connect() as conn:
            if after:
                cursor = (
                    await conn.execute(
                        sa.select(tasks.c.created_at).where(tasks.c.id == after, tasks.c.key_id == key_id)
                    )
                ).first()
                if cursor is None:
                    return [], False
                mark = sa.tuple_(tasks.c.created_at, tasks.c.id)
                edge = sa.tuple_(sa.literal(cursor.created_at), sa.literal(after))
                stmt = stmt.where(mark < edge if newest_first else mark > edge)
            rows = (await conn.execute(stmt.order_by(*order).limit(limit + 1))).all()
        return [row_task(r) for r in rows[:limit]], len(rows) > limit

    async def delete(self, task: Task) -> bool:
        """Remove a finished task and its clips (its ledger rows and delivered events stay,
        for accounting); False if it changed or went away meanwhile."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                tasks.delete().where(tasks.c.id == task.id, tasks.c.version == task.version)
            )
            if result.rowcount != 1:
                return False
            await conn.execute(task_clips.delete().where(task_clips.c.task_id == task.id))
            await forget_task(conn, task.id)
        return True

    async def clip(self, clip_id: str) -> tuple[str, str, str, str | None] | None:
        """(task id, owner key id, provider, upstream clip id) of a public clip id."""
        reader = self.reader
        if reader is not None:
            row = reader.one(self._select_clip, (clip_id,))
        else:
            async with self.engine.connect() as conn:
                row = (await conn.execute(task_clips.select().where(task_clips.c.clip_id == clip_id))).first()
        return (row.task_id, row.key_id, row.provider, row.upstream_clip_id) if row else None

    async def spent(self, key_id: str) -> float:
        signed = sa.case(
            (billing_ledger.c.kind == "refund", -billing_ledger.c.amount), else_=billing_ledger.c.amount
        )
        async with self.engine.connect() as conn:
            value = (
                await conn.execute(sa.select(sa.func.sum(signed)).where(billing_ledger.c.key_id == key_id))
            ).scalar()
        return float(value or 0.0)

    async def ledger(self, task_id: str) -> list[tuple[str, float]]:
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(billing_ledger.c.kind, billing_ledger.c.amount).where(
                        billing_ledger.c.task_id == task_id
                    )
                )
            ).all()
        return [(r.kind, r.amount) for r in rows]

    # --- poller -----------------------------------------------------------------------

    async def lease_due(self, owner: str, limit: int, lease_seconds: float) -> list[Task]:
        """Claim up to `limit` due, unfinished, unleased tasks for `owner`. Several pollers
        (workers, replicas) never hold the same task: SQLite serialises writers, PostgreSQL
        skips rows another transaction has locked."""
        now = time.time()
        due = (
            sa.select(tasks.c.id)
            .where(
                tasks.c.status.not_in(list(TERMINAL)),
                tasks.c.next_poll_at <= now,
                tasks.c.lease_until < now,
            )
            .order_by(tasks.c.next_poll_at)
            .limit(limit)
        )
        if self._postgres:
            due = due.with_for_update(skip_locked=True)
        stmt = (
            tasks.update()
            .where(tasks.c.id.in_(due.scalar_subquery()))
            .values(lease_owner=owner, lease_until=now + lease_seconds)
            .returning(*tasks.c)
        )
        async with self.engine.begin() as conn:
            rows = (await conn.execute(stmt)).all()
        return [row_task(r) for r in rows]

    async def reschedule(self, task: Task, owner: str, next_poll_at: float, attempts: int) -> None:
        """No change to report: poll again later and drop the lease."""
        async with self.engine.begin() as conn:
            await conn.execute(
                tasks.update()
                .where(tasks.c.id == task.id, tasks.c.lease_owner == owner)
                .values(next_poll_at=next_poll_at, poll_attempts=attempts, lease_owner=None, lease_until=0.0)
            )

    async def release_leases(self, owner: str) -> None:
        """Give back every lease `owner` holds (graceful stop), so another poller can take
        those tasks at once instead of after the lease expires."""
        async with self.engine.begin() as conn:
            await conn.execute(
                tasks.update().where(tasks.c.lease_owner == owner).values(lease_owner=None, lease_until=0.0)
            )

    async def transition(
        self,
        task: Task,
        changes: dict[str, Any],
        events: Sequence[OutboxEvent],
        clip_map: Sequence[tuple[str, str]] = (),
    ) -> bool:
        """Apply `changes` if the row still has `task.version` (compare-and-set), with the
        refund of a failed paid task and the webhook events, atomically. False if another
        poller or the deadline sweep got there first."""
        now = time.time()
        values = dict(changes)
        for name in ("request", "result"):
            if name in values:
                values[name] = orjson.dumps(values[name]).decode()
        values.update(version=task.version + 1, updated_at=now, lease_owner=None, lease_until=0.0)
        async with self.engine.begin() as conn:
            result = await conn.execute(
                tasks.update().where(tasks.c.id == task.id, tasks.c.version == task.version).values(**values)
            )
            if result.rowcount != 1:
                return False  # nothing was written; the other writer's state stands
            if changes.get("status") == "FAILURE" and task.price > 0:
                await conn.execute(
                    billing_ledger.insert().values(
                        key_id=task.key_id, task_id=task.id, kind="refund", amount=task.price, created_at=now
                    )
                )
            for clip_id, upstream_clip in clip_map:
                await conn.execute(
                    task_clips.update()
                    .where(task_clips.c.clip_id == clip_id)
                    .values(upstream_clip_id=upstream_clip)
                )
            await insert_events(conn, task.id, events, now)
        return True
