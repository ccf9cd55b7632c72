"""Idempotency keys on SQLite and PostgreSQL: claimed before the upstream call, recorded in
the task's own transaction, replayed, refused for another body, scoped per API key, released
after a failed submit, taken over after an abandoned lease, forgotten after retention."""

from __future__ import annotations

import asyncio
import time

import pytest
import sqlalchemy as sa

from tests.unit.test_task_store import _store, _task
from unigate.errors import Conflict
from unigate.providers.base import InputFile, TaskSubmission
from unigate.store.schema import idempotency_keys
from unigate.tasks import idempotency
from unigate.tasks.idempotency import IdempotencyStore, as_submitted, fingerprint
from unigate.tasks.model import SUCCESS
from unigate.tasks.store import NewTask, TaskStore


async def _commit(store: TaskStore, claim: idempotency.Claim, key_id: str = "key_a") -> str:
    task = _task(key_id=key_id)
    await store.insert_batch([NewTask(task, [], [], claim)])
    return task.id


def test_claim_commit_replay_conflict_scope_and_release(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        keys = IdempotencyStore(store.engine)
        first = await keys.acquire("key_a", "k-1", "print-a")
        assert first.claim is not None and first.task_id is None
        assert await keys._attempt("key_a", "k-1", "print-a") is None, "in flight: wait"
        with pytest.raises(Conflict) as caught:
            await keys.acquire("key_a", "k-1", "print-b")
        assert caught.value.code == "idempotency_key_reused" and caught.value.status == 409
        other_key = await keys.acquire("key_b", "k-1", "print-b")
        assert other_key.claim is not None, "another API key's same Idempotency-Key is its own"
        task_id = await _commit(store, first.claim)
        assert (await keys.acquire("key_a", "k-1", "print-a")).task_id == task_id
        # A failed submit gives its key back; a release never frees a committed key.
        await keys.release(other_key.claim)
        again = await keys.acquire("key_b", "k-1", "print-c")
        assert again.claim is not None
        await keys.release(first.claim)
        assert (await keys.acquire("key_a", "k-1", "print-a")).task_id == task_id
        await store.engine.dispose()

    asyncio.run(run())


def test_concurrent_claims_have_one_winner_and_waiters_get_its_task(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        keys = [IdempotencyStore(store.engine) for _ in range(6)]  # as if in six workers

        async def submit(store_keys: IdempotencyStore) -> str:
            found = await store_keys.acquire("key_a", "same", "print")
            if found.task_id is not None:
                return found.task_id
            assert found.claim is not None
            await asyncio.sleep(0.3)  # the upstream call
            return await _commit(store, found.claim)

        ids = await asyncio.gather(*(submit(k) for k in keys))
        assert len(set(ids)) == 1
        async with store.engine.connect() as conn:
            count = (await conn.execute(sa.select(sa.func.count()).select_from(idempotency_keys))).scalar()
        assert count == 1
        await store.engine.dispose()

    asyncio.run(run())


def test_in_flight_too_long_is_409_in_use(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idempotency, "WAIT", 0.3)

    async def run() -> None:
        store = await _store(database_url)
        keys = IdempotencyStore(store.engine)
        assert (await keys.acquire("key_a", "slow", "p")).claim is not None
        started = time.monotonic()
        with pytest.raises(Conflict) as caught:
            await keys.acquire("key_a", "slow", "p")
        assert caught.value.code == "idempotency_key_in_use" and caught.value.headers["retry-after"] == "1"
        assert 0.3 <= time.monotonic() - started < 2
        await store.engine.dispose()

    asyncio.run(run())


def test_abandoned_and_expired_keys_are_taken_over(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        keys = IdempotencyStore(store.engine)
        t = idempotency_keys.c
        stale = await keys.acquire("key_a", "crashed", "p")
        assert stale.claim is not None
        async with store.engine.begin() as conn:  # the process holding it died mid-submit
            await conn.execute(idempotency_keys.update().values(lease_until=time.time() - 1))
        fresh = await keys.acquire("key_a", "crashed", "p")
        assert fresh.claim is not None and fresh.claim.token != stale.claim.token
        with pytest.raises(Conflict):  # the old holder's late commit fails, storing nothing
            await _commit(store, stale.claim)
        task_id = await _commit(store, fresh.claim)
        async with store.engine.begin() as conn:  # a day later
            await conn.execute(idempotency_keys.update().values(created_at=time.time() - 25 * 3600))
        later = await keys.acquire("key_a", "crashed", "another body")
        assert later.claim is not None, "past retention a key is new again"
        async with store.engine.connect() as conn:
            row = (await conn.execute(sa.select(idempotency_keys).where(t.key_id == "key_a"))).one()
        assert row.task_id is None and row.fingerprint == "another body"
        assert await store.get(task_id) is not None
        await store.engine.dispose()

    asyncio.run(run())


def test_deleting_a_task_frees_its_key(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        keys = IdempotencyStore(store.engine)
        claim = (await keys.acquire("key_a", "del", "p")).claim
        assert claim is not None
        task_id = await _commit(store, claim)
        task = await store.get(task_id)
        assert task is not None and await store.delete(task)
        assert (await keys.acquire("key_a", "del", "p")).claim is not None
        await store.engine.dispose()

    asyncio.run(run())


def test_fingerprint_is_of_the_validated_submit_and_replay_shows_it_as_accepted() -> None:
    job = TaskSubmission("video", "text2video", "m", {"prompt": "a", "seconds": 4}, files={})
    same = TaskSubmission("video", "text2video", "m", {"seconds": 4, "prompt": "a"}, files={})
    base = {"pinned": "", "notify_hook": "", "clip_count": 0, "stored_fields": None, "external_id": ""}
    assert fingerprint(job, **base) == fingerprint(same, **base), "key order does not matter"
    changed = TaskSubmission("video", "text2video", "m", {"prompt": "b", "seconds": 4})
    assert fingerprint(changed, **base) != fingerprint(job, **base)
    assert fingerprint(job, **{**base, "notify_hook": "https://x"}) != fingerprint(job, **base)
    with_file = TaskSubmission("video", "image2video", "m", {}, files={"image": InputFile(b"\x89PNG1")})
    other_file = TaskSubmission("video", "image2video", "m", {}, files={"image": InputFile(b"\x89PNG2")})
    assert fingerprint(with_file, **base) != fingerprint(other_file, **base)
    task = _task()
    task.status, task.progress, task.result, task.version = SUCCESS, 100, {"x": 1}, 3
    shown = as_submitted(task)
    assert (shown.status, shown.progress, shown.result, shown.version) == ("SUBMITTED", 0, {}, 0)
    assert shown.id == task.id and shown.start_time == task.submit_time
