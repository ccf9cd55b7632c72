"""kill -9 of a gateway with 40 background responses in flight: another process sharing the
database takes over the ones whose leases lapse, and every response ends `completed` with a
whole stored stream (events numbered without a gap, ending with `response.completed`, whose
deltas spell its output). A final state was once committed before the run's last batch of
events, so a kill between the two left a completed response whose stream stopped short."""

from __future__ import annotations

import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess

pytestmark = pytest.mark.process

WORDS = " ".join(f"w{i}" for i in range(150))
RUNS = 40


def _stream(db: Path, response_id: str) -> list[dict[str, object]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT sequence_number, data FROM response_events WHERE response_id = ? "
            "ORDER BY sequence_number",
            (response_id,),
        ).fetchall()
    finally:
        conn.close()
    events = []
    for seq, data in rows:
        event = json.loads(data.split("data: ", 1)[1])
        assert event["sequence_number"] == seq
        events.append(event)
    return events


def test_kill_9_with_background_runs_in_flight_loses_no_event(tmp_path: Path) -> None:
    with FakeOpenAI(mode="slow_stream", slow_seconds=0.004, reply_text=WORDS) as slow:
        config = {
            "responses": {"background_lease_seconds": 3},
            "providers": [{"name": "slow", "protocol": "openai", "base_url": slow.base_url, "api_key": "sk"}],
            "models": [{"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}]}],
        }
        db = tmp_path / "shared.db"
        env = {"UNIGATE_DATABASE_URL": f"sqlite:///{db}"}
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        first = GatewayProcess(tmp_path / "a", config=config, env=env, workers=2).start()
        try:
            key = first.create_key()

            def accept(i: int) -> str:
                with openai.OpenAI(base_url=first.base_url + "/v1", api_key=key, max_retries=0) as client:
                    return client.responses.create(model="slow-chat", input=f"run {i}", background=True).id

            with ThreadPoolExecutor(8) as pool:
                ids = list(pool.map(accept, range(RUNS)))
            time.sleep(0.5)  # some have finished, most are mid-stream
        finally:
            first.kill()
        killed = time.monotonic()
        with GatewayProcess(tmp_path / "b", config=config, env=env) as second:
            client = openai.OpenAI(base_url=second.base_url + "/v1", api_key=key, max_retries=0)
            pending = set(ids)
            while pending:
                assert time.monotonic() - killed < 40, f"{len(pending)} responses never finished"
                pending = {
                    rid
                    for rid in pending
                    if client.responses.retrieve(rid).status in ("queued", "in_progress")
                }
                time.sleep(0.2)
            print(f"{RUNS} background responses done {time.monotonic() - killed:.1f} s after kill -9")
            for rid in ids:
                done = client.responses.retrieve(rid)
                assert done.status == "completed", (rid, done.status)
                events = _stream(db, rid)
                assert [e["sequence_number"] for e in events] == list(range(len(events))), rid
                assert events[-1]["type"] == "response.completed", (rid, events[-1]["type"], len(events))
                deltas = "".join(str(e["delta"]) for e in events if e["type"] == "response.output_text.delta")
                assert deltas == done.output_text and deltas.split() == WORDS.split()
                replayed = list(client.responses.retrieve(rid, stream=True))
                assert [e.sequence_number for e in replayed] == list(range(len(events)))
