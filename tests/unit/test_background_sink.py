"""A background run's stream into the database, on SQLite and PostgreSQL, with the interleavings
that used to lose or contradict state made deterministic:

- the final state is written in the same transaction as the events not yet written, the
  terminal one among them, so a reader that sees `completed` sees the whole stream (a live
  replay used to stop at the state with the last batch still unwritten, and a kill -9 between
  the two lost it for good);
- when a cancel wins the compare-and-set, nothing more is written or sent (the run's terminal
  event used to be stored after the cancel, giving two answers);
- the same for a natively relayed Responses stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson

from unigate.api.openai.responses_background import _Sink
from unigate.api.openai.responses_call import NATIVE_FORMAT, ResponseCall
from unigate.providers.base import Reply, Target
from unigate.responses.runs import BackgroundRuns
from unigate.responses.store import ResponseStore, StoredResponse
from unigate.store import db
from unigate.translate.responses_request import parse_request
from unigate.translate.responses_response import ResponseFrame
from unigate.translate.responses_stream import queued_events

HEAD = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _chat_chunks(words: int) -> list[bytes]:
    deltas = [{"role": "assistant", "content": ""}] + [{"content": f"w{i} "} for i in range(words)]
    out = [
        b"data: " + orjson.dumps({**HEAD, "choices": [{"index": 0, "delta": d}]}) + b"\n\n" for d in deltas
    ]
    done = {**HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {**HEAD, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": words}}
    out += [b"data: " + orjson.dumps(done) + b"\n\n", b"data: " + orjson.dumps(usage) + b"\n\n"]
    return [*out, b"data: [DONE]\n\n"]


def _native_events(response_id: str, words: int) -> list[bytes]:
    def event(kind: str, **fields: Any) -> bytes:
        return f"event: {kind}\n".encode() + b"data: " + orjson.dumps({"type": kind, **fields}) + b"\n\n"

    body = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    out = [event("response.created", sequence_number=0, response=body)]
    out += [event("response.output_text.delta", sequence_number=i + 1, delta=f"w{i} ") for i in range(words)]
    final = {**body, "status": "completed", "usage": {"input_tokens": 3, "output_tokens": words}}
    return [*out, event("response.completed", sequence_number=words + 1, response=final)]


class Recording(BackgroundRuns):
    """Notes which events were stored at the moment each state change committed."""

    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.seen_at_state: list[tuple[str, list[bytes]]] = []

    async def set_state(self, response_id: str, owner: str, body: dict[str, Any], events: Any = ()) -> bool:
        won = await super().set_state(response_id, owner, body, events)
        stored = [data for _, data in await self.events_after(response_id, -1, 10_000)]
        self.seen_at_state.append((str(body["status"]), stored))
        return won


async def _accepted(store: ResponseStore) -> tuple[dict[str, Any], ResponseFrame, Any]:
    req = parse_request({"model": "m", "input": "hi", "background": True, "stream": True})
    accepted = ResponseFrame.for_request(req).response("queued", [])
    record = StoredResponse(
        id=accepted["id"],
        key_id="k",
        model="m",
        provider="",
        native=False,
        status="queued",
        previous_id=None,
        body=accepted,
        input=req.input_items,
        background=True,
    )
    await store.insert(record, {"model": "m"}, ("w", time.time() + 30), queued_events(accepted))
    return accepted, ResponseFrame.for_request(req), req


async def _relay(
    call: ResponseCall, sink: _Sink, chunks: list[bytes], wire: str, on_chunk: Any = None
) -> list[bytes]:
    """What `send_reply` does with a stream, minus the socket: each run to the sink."""

    async def upstream() -> AsyncIterator[bytes]:
        for i, chunk in enumerate(chunks):
            if on_chunk is not None:
                await on_chunk(i)
            yield chunk

    target: Target = SimpleNamespace(provider=SimpleNamespace(name="p", protocol="openai"))  # type: ignore[assignment]
    reply = await call.finish(Reply(stream=upstream(), content_type=b"text/event-stream", wire=wire), target)
    assert reply.stream is not None
    sent = []
    async for run in reply.stream:
        sent.append(run)
        await sink.send({"type": "http.response.body", "body": run, "more_body": True})
    await sink.send({"type": "http.response.body", "body": b"", "more_body": False})
    return sent


def _run(database_url: str, body: Any) -> None:
    async def go() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        try:
            await body(engine)
        finally:
            await engine.dispose()

    asyncio.run(go())


def test_the_final_state_commits_with_the_whole_stream(database_url: str) -> None:
    async def body(engine: Any) -> None:
        store, runs = ResponseStore(engine), Recording(engine)
        for wire in ("openai", NATIVE_FORMAT):
            accepted, _, req = await _accepted(store)
            sink = _Sink(runs, accepted["id"], "w")
            call = ResponseCall(store, req, "k", [], None, (sink, accepted))
            chunks = _chat_chunks(30) if wire == "openai" else _native_events("up_1", 30)
            await _relay(call, sink, chunks, wire)
            status, stored = runs.seen_at_state[-1]
            assert status == "completed"
            kinds = [orjson.loads(e.split(b"data: ", 1)[1]).get("type") for e in stored]
            assert kinds[-1] == "response.completed", f"{wire}: the state committed before its last events"
            numbers = [orjson.loads(e.split(b"data: ", 1)[1])["sequence_number"] for e in stored]
            assert numbers == list(range(len(numbers)))
            assert await runs.status(accepted["id"]) == "completed"

    _run(database_url, body)


def test_a_cancel_that_wins_ends_the_stream_there(database_url: str) -> None:
    async def body(engine: Any) -> None:
        store, runs = ResponseStore(engine), BackgroundRuns(engine)
        for wire in ("openai", NATIVE_FORMAT):
            accepted, _, req = await _accepted(store)
            rid = accepted["id"]
            sink = _Sink(runs, rid, "w")
            call = ResponseCall(store, req, "k", [], None, (sink, accepted))

            chunks = _chat_chunks(8) if wire == "openai" else _native_events("up_2", 8)
            cancelled = {**accepted, "status": "cancelled"}

            async def cancel_at_the_end(
                i: int, last: int = len(chunks) - 2, rid: str = rid, body: Any = cancelled
            ) -> None:
                if i == last:  # the upstream is nearly done; the run has not written its end yet
                    assert await runs.cancel(rid, "k", body)

            sent = await _relay(call, sink, chunks, wire, cancel_at_the_end)
            assert not any(b"response.completed" in run for run in sent), f"{wire}: sent after the cancel"
            stored = b"".join(d for _, d in await runs.events_after(rid, -1, 10_000))
            assert b"response.completed" not in stored, f"{wire}: a cancelled response's stream completed"
            assert await runs.status(rid) == "cancelled"

    _run(database_url, body)


class HeldFinalState(BackgroundRuns):
    """Holds the final state's write until released, and notes every append."""

    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.writing = asyncio.Event()
        self.release = asyncio.Event()
        self.appended: list[list[int]] = []

    async def set_state(self, response_id: str, owner: str, body: dict[str, Any], events: Any = ()) -> bool:
        if body["status"] not in ("queued", "in_progress"):
            self.writing.set()
            await self.release.wait()
        return await super().set_state(response_id, owner, body, events)

    async def append(self, response_id: str, owner: str, events: Any) -> bool:
        self.appended.append([seq for seq, _ in events])
        return await super().append(response_id, owner, events)


def test_a_stop_during_the_final_write_writes_no_event_twice(database_url: str) -> None:
    """A graceful stop cancels a run while its final state is being written, and the run's
    cancel handler flushes its sink: that flush wrote the events the final state carried a
    second time, one of the two writes failed on their keys, and when it was the final state's
    the response was left running for another worker to start over."""

    async def body(engine: Any) -> None:
        store, runs = ResponseStore(engine), HeldFinalState(engine)
        accepted, _, req = await _accepted(store)
        rid = accepted["id"]
        sink = _Sink(runs, rid, "w")
        call = ResponseCall(store, req, "k", [], None, (sink, accepted))
        assert await runs.set_state(rid, "w", {**accepted, "status": "in_progress"})

        async def run() -> None:
            try:
                await _relay(call, sink, _chat_chunks(12), "openai")
            except asyncio.CancelledError:
                await sink.flush()  # what `BackgroundRunner._run` does when stopped
                raise

        task = asyncio.create_task(run())
        await runs.writing.wait()
        appended_before = len(runs.appended)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert len(runs.appended) == appended_before, "the stop's flush wrote the final state's events"
        runs.release.set()
        for _ in range(100):  # the final write outlives the cancelled run
            if await runs.status(rid) == "completed":
                break
            await asyncio.sleep(0.02)
        assert await runs.status(rid) == "completed"
        stored = [orjson.loads(d.split(b"data: ", 1)[1]) for _, d in await runs.events_after(rid, -1, 10_000)]
        assert [e["sequence_number"] for e in stored] == list(range(len(stored)))
        assert stored[-1]["type"] == "response.completed"

    _run(database_url, body)
