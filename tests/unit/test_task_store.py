"""The task store on SQLite and PostgreSQL: group-committed inserts, owner-scoped reads,
exclusive leases, compare-and-set transitions with exactly-once refunds, ordered outbox."""

from __future__ import annotations

import asyncio
import time
import uuid

from unigate.store import db
from unigate.tasks.group_commit import GroupCommit
from unigate.tasks.model import FAILURE, IN_PROGRESS, SUBMITTED, Task
from unigate.tasks.store import NewTask, OutboxEvent, TaskStore


def _task(key_id: str = "key_a", price: float = 0.5, provider: str = "p") -> Task:
    now = time.time()
    return Task(
        id=str(uuid.uuid4()),
        key_id=key_id,
        family="music",
        action="MUSIC",
        model="chirp-v4",
        provider=provider,
        upstream_id="up-" + uuid.uuid4().hex,
        status=SUBMITTED,
        progress=0,
        fail_reason="",
        submit_time=int(now),
        start_time=0,
        finish_time=0,
        notify_hook="http://hook.example/x",
        request={"prompt": "p"},
        result={},
        public_base="http://gw",
        price=price,
        next_poll_at=now - 1,
        deadline_at=now + 600,
        created_at=now,
        updated_at=now,
        clip_ids=[str(uuid.uuid4()), str(uuid.uuid4())],
    )


def _event(task: Task, n: int) -> OutboxEvent:
    return OutboxEvent(f"msg_{task.id[:8]}_{n}", task.id, task.key_id, task.notify_hook, b'{"n": %d}' % n)


async def _store(url: str) -> TaskStore:
    engine = db.create_engine(url)
    await db.migrate(engine)
    return TaskStore(engine)


def test_group_commit_reads_and_scoping(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        writer = GroupCommit(store)
        await writer.start()
        tasks = [_task() for _ in range(20)] + [_task(key_id="key_b")]
        await asyncio.gather(*(writer.insert(NewTask(t, [(c, None) for c in t.clip_ids], [])) for t in tasks))
        await writer.stop()
        got = await store.get(tasks[0].id)
        assert got is not None and got.clip_ids == tasks[0].clip_ids and got.request == {"prompt": "p"}
        mine = await store.get_many([tasks[1].id, tasks[-1].id, "nope", tasks[0].id], "key_a")
        assert [t.id for t in mine] == [tasks[1].id, tasks[0].id], "other keys' and unknown ids are left out"
        clip = await store.clip(tasks[0].clip_ids[1])
        assert clip == (tasks[0].id, "key_a", "p", None)
        assert await store.spent("key_a") == 10.0
        await store.engine.dispose()

    asyncio.run(run())


def test_leases_are_exclusive_and_expire(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        tasks = [_task() for _ in range(10)]
        await store.insert_batch([NewTask(t, [], []) for t in tasks])
        first, second = await asyncio.gather(store.lease_due("a", 6, 30), store.lease_due("b", 6, 30))
        ids_a, ids_b = {t.id for t in first}, {t.id for t in second}
        assert not ids_a & ids_b and len(ids_a | ids_b) == 10
        assert await store.lease_due("c", 10, 30) == []
        await store.reschedule(first[0], "a", time.time() - 1, 1)
        again = await store.lease_due("c", 10, 0.01)
        assert [t.id for t in again] == [first[0].id], "a released task is due again"
        await asyncio.sleep(0.05)
        assert [t.id for t in await store.lease_due("e", 10, 30)] == [first[0].id], (
            "an expired lease is reclaimed"
        )
        await store.engine.dispose()

    asyncio.run(run())


def test_transition_is_compare_and_set_with_one_refund(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        task = _task(price=0.5)
        await store.insert_batch([NewTask(task, [(c, None) for c in task.clip_ids], [])])
        assert await store.transition(
            task, {"status": IN_PROGRESS, "progress": 40}, [_event(task, 1)], [(task.clip_ids[0], "upclip-0")]
        )
        assert not await store.transition(task, {"status": FAILURE}, []), "a stale version loses"
        current = await store.get(task.id)
        assert current is not None and current.status == IN_PROGRESS and current.version == 1
        results = await asyncio.gather(
            store.transition(current, {"status": FAILURE, "fail_reason": "x"}, [_event(task, 2)]),
            store.transition(current, {"status": FAILURE, "fail_reason": "y"}, [_event(task, 3)]),
        )
        assert sorted(results) == [False, True], "exactly one concurrent transition wins"
        assert sorted(await store.ledger(task.id)) == [("refund", 0.5), ("reserve", 0.5)]
        assert await store.spent("key_a") == 0.0
        assert (await store.clip(task.clip_ids[0])) == (task.id, "key_a", "p", "upclip-0")
        await store.engine.dispose()

    asyncio.run(run())


def test_outbox_delivers_a_tasks_events_in_order(database_url: str) -> None:
    async def run() -> None:
        store = await _store(database_url)
        task = _task()
        other = _task()
        await store.insert_batch(
            [NewTask(task, [], [_event(task, 0)]), NewTask(other, [], [_event(other, 0)])]
        )
        await store.transition(task, {"progress": 10}, [_event(task, 1)])
        leased = await store.lease_deliveries(10, 30)
        assert sorted(d.id for d in leased) == sorted([_event(task, 0).id, _event(other, 0).id])
        await store.retry_later(_event(task, 0).id, 1, time.time() - 1, "HTTP 500")
        leased = await store.lease_deliveries(10, 30)
        assert [d.id for d in leased] == [_event(task, 0).id], "event 1 waits for event 0"
        assert leased[0].attempts == 1
        await store.delivered(_event(task, 0).id)
        assert [d.id for d in await store.lease_deliveries(10, 30)] == [_event(task, 1).id]
        await store.give_up(_event(task, 1).id, 5, "refused")
        states = {e["id"]: e["state"] for e in await store.events_for(task.id)}
        assert states == {_event(task, 0).id: "delivered", _event(task, 1).id: "failed"}
        await store.engine.dispose()

    asyncio.run(run())


def test_gone_hook_skips_the_tasks_pending_and_later_events(database_url: str) -> None:
    """A 410 marks that event `gone`, the task's other pending events `skipped`, and events
    the task produces later are written `skipped`: none of them is ever leased. Another
    task's events are untouched."""

    async def run() -> None:
        store = await _store(database_url)
        task, other = _task(), _task()
        await store.insert_batch(
            [NewTask(task, [], [_event(task, 0)]), NewTask(other, [], [_event(other, 0)])]
        )
        await store.transition(task, {"progress": 10}, [_event(task, 1)])
        leased = await store.lease_deliveries(10, 30)
        assert _event(task, 0).id in {d.id for d in leased}
        assert await store.hook_gone(_event(task, 0).id, task.id, 1, "endpoint gone (HTTP 410)") == 1
        current = await store.get(task.id)
        assert current is not None
        assert await store.transition(current, {"status": FAILURE, "fail_reason": "x"}, [_event(task, 2)])
        states = {e["id"]: e["state"] for e in await store.events_for(task.id)}
        assert states == {
            _event(task, 0).id: "gone",
            _event(task, 1).id: "skipped",
            _event(task, 2).id: "skipped",
        }
        await store.retry_later(_event(other, 0).id, 1, time.time() - 1, "HTTP 500")
        assert [d.id for d in await store.lease_deliveries(10, 30)] == [_event(other, 0).id]
        await store.engine.dispose()

    asyncio.run(run())
