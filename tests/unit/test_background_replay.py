"""A background response's replay (`GET /v1/responses/{id}?stream=true`, `api/responses_background.replay`)
follows a running response to its terminal event: the run writes its final state together with
the events not yet written (`_Sink.seal`, one transaction), so the replay that sees the final
state reads the whole stream; a cancelled response, which has no terminal event to come, ends
at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from unigate.api.openai.responses_background import replay
from unigate.edge.asgi import Request
from unigate.responses.runs import BackgroundRuns
from unigate.responses.store import ResponseStore, StoredResponse
from unigate.store import db


def _event(seq: int, kind: str) -> tuple[int, bytes]:
    return seq, f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{seq}}}\n\n'.encode()


async def _setup(tmp_path: Path) -> tuple[BackgroundRuns, ResponseStore]:
    engine = db.create_engine(f"sqlite:///{tmp_path / 'replay.db'}")
    await db.migrate(engine)
    store, runs = ResponseStore(engine), BackgroundRuns(engine)
    accepted = StoredResponse(
        id="resp_1",
        key_id="key_a",
        model="m",
        provider="",
        native=False,
        status="queued",
        previous_id=None,
        body={"id": "resp_1", "status": "queued", "output": []},
        input=[],
        background=True,
    )
    queued = [_event(0, "response.created"), _event(1, "response.queued")]
    await store.insert(accepted, {"model": "m"}, ("worker", time.time() + 30), queued)
    await runs.set_state(
        "resp_1", "worker", {"id": "resp_1", "status": "in_progress"}, [_event(2, "response.in_progress")]
    )
    return runs, store


async def _follow(runs: BackgroundRuns) -> tuple[bytes, float]:
    sent: list[dict[str, Any]] = []
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/responses/resp_1",
        "headers": [],
        "query_string": b"",
    }
    started = time.monotonic()
    await replay(Request(scope, receive, send, "req"), runs, "resp_1", -1, 0.0)
    return b"".join(m.get("body", b"") for m in sent), time.monotonic() - started


def test_a_running_response_is_followed_to_its_terminal_event(tmp_path: Path) -> None:
    async def run() -> bytes:
        runs, _ = await _setup(tmp_path)
        follower = asyncio.ensure_future(_follow(runs))
        await asyncio.sleep(0.2)  # the replay has sent events 0-2 and polls
        assert await runs.append("resp_1", "worker", [_event(3, "response.output_text.delta")])
        await asyncio.sleep(0.3)
        final = {"id": "resp_1", "status": "completed"}
        assert await runs.set_state("resp_1", "worker", final, [_event(4, "response.completed")])
        body, _ = await follower
        await runs.engine.dispose()
        return body

    body = asyncio.run(run())
    assert body.count(b"event: ") == 5 and body.endswith(b'"sequence_number":4}\n\n'), body


def test_a_cancelled_response_ends_at_once(tmp_path: Path) -> None:
    async def run() -> tuple[bytes, float]:
        runs, _ = await _setup(tmp_path)
        assert await runs.cancel("resp_1", "key_a", {"id": "resp_1", "status": "cancelled"})
        followed = await _follow(runs)
        await runs.engine.dispose()
        return followed

    body, took = asyncio.run(run())
    assert body.count(b"event: ") == 3 and took < 1.0
