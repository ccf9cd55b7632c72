"""Idempotent task submits: an `Idempotency-Key` names one submit per API key.

The first request with a key *claims* it (a row without a task, leased for `LEASE` seconds)
before the upstream is called; the task's own commit writes its id into that row in the
same transaction (`TaskStore.insert_batch`), so a retry after a crash that lost the answer
finds the task. A retry with the same body gets that task; one with another body is a 409;
one that arrives while the first is in flight waits for it (at most `WAIT` seconds, then
409 "in progress"). A claim whose submit failed is released; one whose process died expires
with its lease. Keys are kept `RETENTION` seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from unigate.errors import Conflict, InvalidRequest
from unigate.providers.base import TaskSubmission
from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.db import upsert_insert
from unigate.store.schema import idempotency_keys
from unigate.tasks.model import SUBMITTED, Task

log = logging.getLogger("unigate.tasks")

RETENTION = 24 * 3600.0
LEASE = 120.0  # longer than any task submit takes; a claim older than this was abandoned
WAIT = 30.0  # how long a retry waits for the same key's submit in flight
_POLL = 0.1
_PURGE_EVERY = 600.0
MAX_KEY = 255


def header_value(raw: bytes | None, count: int) -> str | None:
    """The `Idempotency-Key` header's value (`count` = how many were sent), or None; 400 for
    one that is empty, repeated, longer than 255 or not visible ASCII."""
    if raw is None:
        return None
    value = raw.decode("latin-1").strip()
    if count > 1 or not 1 <= len(value) <= MAX_KEY or not all(33 <= ord(c) <= 126 for c in value):
        raise InvalidRequest(
            f"The Idempotency-Key header must be one value of 1-{MAX_KEY} visible ASCII characters.",
            param="Idempotency-Key",
            code="invalid_idempotency_key",
        )
    return value


def fingerprint(
    job: TaskSubmission,
    *,
    pinned: str,
    notify_hook: str,
    clip_count: int,
    stored_fields: dict[str, Any] | None,
    external_id: str,
    picked: tuple[str, ...] = (),
) -> str:
    """SHA-256 of the validated submit (not of its bytes: a multipart boundary or JSON key
    order differs between two sends of the same request), without the fields in `picked`
    (values the gateway chose, such as a random seed, which differ between two sends)."""

    def sent(values: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if values is None else {k: v for k, v in values.items() if k not in picked}

    files = {name: [_digest(f.data), f.filename, f.content_type] for name, f in job.files.items()}
    document = {
        "family": job.family,
        "action": job.action,
        "model": job.model,
        "fields": sent(job.fields),
        "stored": sent(stored_fields),
        "upload": _digest(job.upload) if job.upload is not None else None,
        "upload_name": job.upload_name,
        "files": files,
        "pinned": pinned,
        "hook": notify_hook,
        "clips": clip_count,
        "external": external_id,
    }
    options = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return hashlib.sha256(orjson.dumps(document, option=options, default=str)).hexdigest()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def as_submitted(task: Task) -> Task:
    """The task as the first request's answer showed it: what a replay answers, whatever the
    task became since (its current state is a fetch away)."""
    return dataclasses.replace(
        task,
        status=SUBMITTED,
        progress=0,
        fail_reason="",
        start_time=task.submit_time,
        finish_time=0,
        result={},
        version=0,
        poll_attempts=0,
        updated_at=task.created_at,
    )


@dataclass(slots=True)
class Claim:
    """This request's hold on a key; `queued` once its task is handed to the commit (from
    then on the commit, not the request, decides what the row ends as)."""

    key_id: str
    key: str
    token: str
    queued: bool = False


@dataclass(frozen=True, slots=True)
class Acquired:
    claim: Claim | None = None  # ours: submit, then commit with it
    task_id: str | None = None  # already done: answer this task


def reused() -> Conflict:
    return Conflict(
        "This Idempotency-Key was already used with a different request; use a new key for a new task.",
        param="Idempotency-Key",
        code="idempotency_key_reused",
    )


class IdempotencyStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._insert = upsert_insert(engine.dialect.name)
        self._purged_at = 0.0

    async def acquire(self, key_id: str, key: str, print_: str) -> Acquired:
        """Claim `key` for this submit, or the task an earlier submit with it created; waits
        while another request holds it. Raises `Conflict` for another body, or when the
        holder is still busy after `WAIT` seconds."""
        deadline = time.monotonic() + WAIT
        while True:
            found = await self._attempt(key_id, key, print_)
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise Conflict(
                    "A request with this Idempotency-Key is still being processed; retry shortly.",
                    param="Idempotency-Key",
                    code="idempotency_key_in_use",
                    headers={"retry-after": "1"},
                )
            await asyncio.sleep(_POLL)

    async def _attempt(self, key_id: str, key: str, print_: str) -> Acquired | None:
        now = time.time()
        token = secrets.token_hex(16)
        t = idempotency_keys.c
        mine = {
            "fingerprint": print_,
            "task_id": None,
            "claim": token,
            "lease_until": now + LEASE,
            "created_at": now,
        }
        async with self.engine.begin() as conn:
            await self._purge(conn, now)
            insert = (
                self._insert(idempotency_keys)
                .values(key_id=key_id, idempotency_key=key, **mine)
                .on_conflict_do_nothing(index_elements=["key_id", "idempotency_key"])
            )
            if (await conn.execute(insert)).rowcount == 1:
                return Acquired(claim=Claim(key_id, key, token))
            where = (t.key_id == key_id, t.idempotency_key == key)
            row = (await conn.execute(sa.select(idempotency_keys).where(*where))).first()
            if row is None:
                return None  # released meanwhile: try again
            if row.created_at < now - RETENTION or (row.task_id is None and row.lease_until < now):
                # Expired, or abandoned by a process that died mid-submit: take it over.
                taken = await conn.execute(
                    idempotency_keys.update().where(*where, t.claim == row.claim).values(**mine)
                )
                return Acquired(claim=Claim(key_id, key, token)) if taken.rowcount == 1 else None
        if row.fingerprint != print_:
            raise reused()
        return Acquired(task_id=row.task_id) if row.task_id is not None else None

    async def _purge(self, conn: AsyncConnection, now: float) -> None:
        """Drop keys past retention, at most every few minutes per process (no extra loop)."""
        if now - self._purged_at < _PURGE_EVERY:
            return
        self._purged_at = now
        await conn.execute(idempotency_keys.delete().where(idempotency_keys.c.created_at < now - RETENTION))

    async def release(self, claim: Claim) -> None:
        """The submit failed before its task was committed: free the key for a retry."""
        t = idempotency_keys.c
        try:
            async with self.engine.begin() as conn:
                await conn.execute(
                    idempotency_keys.delete().where(
                        t.key_id == claim.key_id,
                        t.idempotency_key == claim.key,
                        t.claim == claim.token,
                        t.task_id.is_(None),
                    )
                )
        except Exception as exc:  # the lease frees it later anyway
            log.warning("releasing an idempotency key failed: %s", type(exc).__name__)


async def complete(conn: AsyncConnection, claim: Claim, task_id: str) -> None:
    """In the task's own insert transaction: the key now names the task. Fails the
    transaction if the claim was lost (its lease ran out and another request took it)."""
    t = idempotency_keys.c
    done = await conn.execute(
        idempotency_keys.update()
        .where(t.key_id == claim.key_id, t.idempotency_key == claim.key, t.claim == claim.token)
        .values(task_id=task_id, lease_until=0.0)
    )
    if done.rowcount != 1:
        raise Conflict(
            "This Idempotency-Key was taken over by another request while this one was in flight.",
            param="Idempotency-Key",
            code="idempotency_key_in_use",
        )


async def forget_task(conn: AsyncConnection, task_id: str) -> None:
    """A deleted task's keys go with it (a retry then makes a new task)."""
    await conn.execute(idempotency_keys.delete().where(idempotency_keys.c.task_id == task_id))
