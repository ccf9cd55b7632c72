"""Background responses' rows on SQLite and PostgreSQL (`responses/runs.py`): state changes
are compare-and-set on a pending status (a cancel is never overwritten by a finishing run,
nor a finished run by a cancel), leases renew, lapse and are claimed by exactly one worker
(which drops the events the dead run wrote after the accepted ones), and a graceful stop
hands them back at once."""

from __future__ import annotations

import asyncio
import time

from unigate.responses.runs import BackgroundRuns
from unigate.responses.store import ResponseStore, StoredResponse
from unigate.store import db


def _accepted(rid: str) -> StoredResponse:
    return StoredResponse(
        id=rid,
        key_id="key_a",
        model="m",
        provider="",
        native=False,
        status="queued",
        previous_id=None,
        body={"id": rid, "status": "queued", "output": []},
        input=[],
        background=True,
    )


def _event(seq: int) -> tuple[int, bytes]:
    return seq, f'event: e\ndata: {{"sequence_number":{seq}}}\n\n'.encode()


def test_state_leases_and_takeover(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store, runs = ResponseStore(engine), BackgroundRuns(engine)
        now = time.time()
        await store.insert(
            _accepted("resp_1"), {"model": "m"}, ("worker-a", now + 30), [_event(0), _event(1)]
        )
        await store.insert(
            _accepted("resp_2"), {"model": "m"}, ("worker-a", now + 30), [_event(0), _event(1)]
        )

        assert await runs.set_state("resp_1", "worker-a", {"id": "resp_1", "status": "in_progress"})
        assert await runs.append("resp_1", "worker-a", [_event(2), _event(3)])
        assert [seq for seq, _ in await runs.events_after("resp_1", 0)] == [1, 2, 3]
        assert await runs.due(now) == []  # leases held

        # A cancel wins over the run finishing later, and a second cancel changes nothing.
        assert await runs.cancel("resp_2", "key_a", {"id": "resp_2", "status": "cancelled"})
        assert not await runs.set_state("resp_2", "worker-a", {"id": "resp_2", "status": "completed"})
        assert not await runs.cancel("resp_2", "key_a", {"id": "resp_2", "status": "cancelled"})
        assert await runs.status("resp_2") == "cancelled"
        assert not await runs.cancel("resp_1", "key_other", {"status": "cancelled"})  # not the owner's

        # Renewal reports what was cancelled meanwhile.
        assert await runs.renew("worker-a", ["resp_1", "resp_2"], now + 60) == {"resp_2"}

        # Worker a died: once its lease lapses, exactly one of two claimants gets it.
        [due] = await runs.due(now + 61)
        assert due.id == "resp_1" and due.request == {"model": "m"}
        won = await asyncio.gather(
            runs.claim(due, "worker-b", now + 90, 2), runs.claim(due, "worker-c", now + 90, 2)
        )
        assert sorted(won) == [False, True]
        assert [seq for seq, _ in await runs.events_after("resp_1", -1)] == [0, 1]  # the run starts over
        assert await runs.due(now + 61) == []
        # Worker a was only late, not dead: its run writes nothing more among the new run's
        # events, cannot finish the response, and learns at its next renewal that it lost it.
        assert not await runs.append("resp_1", "worker-a", [_event(4), _event(5)])
        assert not await runs.set_state("resp_1", "worker-a", {"id": "resp_1", "status": "completed"})
        assert [seq for seq, _ in await runs.events_after("resp_1", -1)] == [0, 1]
        assert await runs.status("resp_1") == "in_progress"
        assert await runs.renew("worker-a", ["resp_1"], now + 120) == {"resp_1"}

        # A graceful stop gives the lease back: due at once.
        owner = "worker-b" if won[0] else "worker-c"
        await runs.release(owner, ["resp_1"])
        assert [d.id for d in await runs.due(now)] == ["resp_1"]
        assert await runs.set_state("resp_1", owner, {"id": "resp_1", "status": "completed"})
        assert await runs.due(now + 1000) == []
        await engine.dispose()

    asyncio.run(run())
