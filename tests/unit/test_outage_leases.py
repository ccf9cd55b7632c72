"""What a database outage in the middle of a round leaves behind, on SQLite and PostgreSQL: the
poller gives back the leases it could not release once the database answers (the tasks are
polled again at once, not after the 20 s lease), and the webhook sender marks an event the
receiver accepted as delivered once the database is back (not sent again after the 45 s lease,
and not holding back the task's later events meanwhile)."""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import sqlalchemy as sa

from tests.unit.test_task_store import _event, _store, _task
from unigate.config import TasksConfig
from unigate.providers.base import UpstreamTask
from unigate.tasks.outbox import OutboxDeliverer
from unigate.tasks.poller import Poller
from unigate.tasks.store import NewTask, TaskStore
from unigate.webhooks.sender import DeliveryResult


def _outage() -> Exception:
    """What SQLAlchemy raises when the database connection is gone."""
    return sa.exc.OperationalError("UPDATE tasks ...", {}, ConnectionRefusedError("connection refused"))


class FlakyStore:
    """The real store, except the named writes raise an outage while `down` is set."""

    def __init__(self, store: TaskStore, *failing: str) -> None:
        self._store = store
        self._failing = set(failing)
        self.down = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in self._failing:
            return attr

        async def maybe_fail(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise _outage()
            return await attr(*args, **kwargs)

        return maybe_fail


class QuietProvider:
    """An upstream that answers every poll with nothing new."""

    def __init__(self) -> None:
        from unigate.providers.redact import Redactor

        self.redactor = Redactor([])

    def timeouts(self) -> None:
        return None

    async def poll_tasks(self, refs: list[Any], _timeouts: Any) -> dict[str, UpstreamTask]:
        return {}


class Service:
    def __init__(self, store: Any) -> None:
        self.store = store

    def event(self, _task: Any) -> list[Any]:
        return []


def test_a_poller_gives_back_leases_an_outage_stranded(database_url: str) -> None:
    async def run() -> None:
        real = await _store(database_url)
        task = _task(provider="p")
        await real.insert_batch([NewTask(task, [], [])])
        store = FlakyStore(real, "reschedule")
        poller = Poller(Service(store), {"p": QuietProvider()}, TasksConfig())  # type: ignore[arg-type,dict-item]
        store.down = True  # the database goes away between the claim and the write back
        assert await poller.tick() == 1
        assert await real.lease_due("another poller", 10, 30) == [], "still leased"
        store.down = False
        # The next round gives the lease back first, so the task is due again and polled now
        # (it was left leased for 20 s before).
        assert await poller.tick() == 1
        after = await real.get(task.id)
        assert after is not None and after.poll_attempts == 1
        await real.engine.dispose()

    asyncio.run(run())


class Sender:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def deliver(
        self, _url: str, _payload: bytes, headers: dict[str, str], _timeout: float
    ) -> DeliveryResult:
        self.sent.append(headers["webhook-id"])
        return DeliveryResult(ok=True, status=204, retry_after=None, error="", permanent=False)


class Keys:
    secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()

    async def get(self, _key_id: str) -> Any:
        return type("Record", (), {"webhook_secret": self.secret})()


def test_a_delivery_the_outage_could_not_record_is_marked_not_sent_again(database_url: str) -> None:
    async def run() -> None:
        real = await _store(database_url)
        task = _task()
        await real.insert_batch([NewTask(task, [], [_event(task, 0)])])
        await real.transition(task, {"progress": 10}, [_event(task, 1)])
        store = FlakyStore(real, "delivered")
        sender = Sender()
        deliverer = OutboxDeliverer(store, Keys(), sender, [0, 1], 5.0)  # type: ignore[arg-type]
        store.down = True  # the receiver accepts event 0, then the database is gone
        await deliverer._pass()
        assert sender.sent == [_event(task, 0).id]
        store.down = False
        await deliverer._pass()  # marks event 0 first: event 1 is due at once, event 0 not resent
        await deliverer._pass()
        assert sender.sent == [_event(task, 0).id, _event(task, 1).id]
        states = {e["id"]: e["state"] for e in await real.events_for(task.id)}
        assert set(states.values()) == {"delivered"}
        await real.engine.dispose()

    asyncio.run(run())
