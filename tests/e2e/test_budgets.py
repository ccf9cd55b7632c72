"""Money budgets against the real server: the price table in the config, cost from the real
usage of chat, streams, embeddings, speech and music tasks, the block at the limit in each
family's shape (429 insufficient_quota; 402 on music), concurrent calls at the edge within
the documented bound, and a failed task's price back in the budget."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

Gateway = ServedGateway | GatewayProcess

IN, OUT = 1000.0, 2000.0  # per million tokens: 0.001 and 0.002 per token
EMBED_IN = 500.0
TTS, MUSIC = 0.01, 0.05
FLUSH = 0.1  # usage.flush_seconds


def _config() -> dict[str, Any]:
    def model(name: str, upstream: str, **prices: float) -> dict[str, Any]:
        return {"name": name, "routes": [{"provider": "sandbox", "model": upstream}], **prices}

    return {
        "models": [
            model("priced-chat", "sandbox-chat", input_per_million=IN, output_per_million=OUT),
            model("priced-embed", "sandbox-embedding", input_per_million=EMBED_IN),
            model("priced-tts", "sandbox-tts", price_per_call=TTS),
            model("priced-music", "chirp-v4", price_per_call=MUSIC),
        ],
        "sandbox": {"enabled": True, "music_seconds": 1},
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
        "usage": {"flush_seconds": FLUSH},
    }


# In-process (one worker) by default; the full run also holds them across two worker processes.
@pytest.fixture(scope="module", params=["served", pytest.param("2-workers", marks=pytest.mark.process)])
def gw(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    workdir = Path(tmp_path_factory.mktemp("budgets"))
    if request.param == "served":
        with ServedGateway(workdir, config=_config()) as served:
            yield served
        return
    with GatewayProcess(workdir, config=_config(), workers=2) as g:
        yield g


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _chat(gw: Gateway, key: str, **extra: Any) -> HTTPResult:
    body = {"model": "priced-chat", "messages": [{"role": "user", "content": "hello there"}], **extra}
    return http("POST", gw.base_url + "/v1/chat/completions", body, _auth(key))


def _music(gw: Gateway, key: str, prompt: str = "a calm song") -> HTTPResult:
    body = {"prompt": prompt, "mv": "priced-music", "title": "t", "tags": "calm"}
    return http("POST", gw.base_url + "/suno/submit/music", body, _auth(key))


def _spent(gw: Gateway, key_id: str) -> float:
    rows = gw.admin("GET", "/admin/usage").json()["data"]
    return sum(float(r["cost"]) for r in rows if r["key_id"] == key_id)


def _spent_settled(gw: Gateway, key_id: str) -> float:
    """The key's spend once every worker has flushed its usage (the report flushes the
    answering worker's own; the others write theirs each FLUSH seconds)."""
    time.sleep(3 * FLUSH)
    return _spent(gw, key_id)


def test_cost_from_real_usage_of_every_kind_of_call(gw: Gateway) -> None:
    record = gw.create_key_record(budget=100)
    key = record["key"]
    chat = _chat(gw, key, max_tokens=30).json()["usage"]
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="priced-chat",
            messages=[{"role": "user", "content": "tell me a story"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    streamed = next(c.usage for c in chunks if c.usage is not None)
    assert streamed is not None
    embedded = client.embeddings.create(model="priced-embed", input="hello world").usage
    speech = http(
        "POST",
        gw.base_url + "/v1/audio/speech",
        {"model": "priced-tts", "input": "hi", "voice": "alloy"},
        _auth(key),
    )
    assert speech.status == 200
    assert _music(gw, key).status == 200
    expected = (
        (chat["prompt_tokens"] * IN + chat["completion_tokens"] * OUT) / 1e6
        + (streamed.prompt_tokens * IN + streamed.completion_tokens * OUT) / 1e6
        + embedded.prompt_tokens * EMBED_IN / 1e6
        + TTS
        + MUSIC
    )
    spent = _spent_settled(gw, record["id"])
    print(f"spent {spent:.6f} for chat, stream, embeddings, speech and music (expected {expected:.6f})")
    assert spent == pytest.approx(expected, abs=1e-9)


def test_blocked_at_the_limit_in_each_familys_shape(gw: Gateway) -> None:
    key = gw.create_key(budget=MUSIC)
    assert _music(gw, key).status == 200
    chat = _chat(gw, key, max_tokens=5)
    assert chat.status == 429 and chat.json()["error"]["code"] == "insufficient_quota"
    assert chat.json()["error"]["type"] == "insufficient_quota" and "retry-after" not in chat.headers
    music = _music(gw, key)
    assert music.status == 402
    assert music.json()["code"] == "insufficient_quota" and music.json()["data"] is None
    with pytest.raises(openai.RateLimitError) as info:
        openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0).embeddings.create(
            model="priced-embed", input="x"
        )
    assert info.value.code == "insufficient_quota"


def test_concurrent_calls_at_the_edge_stay_within_the_bound(gw: Gateway) -> None:
    # Each call reserves its prompt's tokens and its whole max_tokens; the sandbox never
    # uses more than that, so the documented bound for such calls is no overspend at all.
    budget = 0.1
    record = gw.create_key_record(budget=budget)
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda _: _chat(gw, record["key"], max_tokens=20), range(20)))
    admitted = [r for r in results if r.status == 200]
    refused = [r for r in results if r.status == 429]
    assert len(admitted) + len(refused) == 20 and admitted and refused
    spent = _spent_settled(gw, record["id"])
    print(f"20 concurrent on a budget of {budget}: {len(admitted)} admitted, spent {spent:.6f}")
    assert spent <= budget + 1e-9
    # What was reserved but not used came back: a call that fits what is really left passes.
    left = budget - spent
    cheap = (2 * IN + 1 * OUT) / 1e6 * 3
    if left > cheap:
        assert _chat(gw, record["key"], max_tokens=1).status == 200


def test_a_failed_task_refunds_its_price(gw: Gateway) -> None:
    record = gw.create_key_record(budget=MUSIC)
    key = record["key"]
    failing = _music(gw, key, "[sandbox:fail] a song that fails")
    assert failing.status == 200
    task_id = failing.json()["data"]["task_id"]
    assert _music(gw, key).status == 402, "the failing task's price is reserved while it runs"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = http("GET", gw.base_url + f"/suno/fetch/{task_id}", headers=_auth(key)).json()["data"][
            "status"
        ]
        if status == "FAILURE":
            break
        time.sleep(0.2)
    assert status == "FAILURE"
    ledger = gw.admin("GET", f"/admin/tasks/{task_id}").json()["ledger"]
    assert {"kind": "refund", "amount": MUSIC} in ledger
    _wait(lambda: _music(gw, key).status == 200)
    assert _spent_settled(gw, record["id"]) == pytest.approx(MUSIC)


def _wait(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("not within the time allowed")
