"""The Responses API under a key's limits and through upstream silences, with the real `openai`
SDK: a Responses call counts against requests-per-minute, tokens-per-minute and budgets like a
chat call (OpenAI's x-ratelimit headers, 429 in OpenAI's shape with an honest Retry-After; a
background response admitted once, when accepted), and a translated stream that goes quiet
carries SSE comments the SDK skips."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.served import ServedGateway

WORDS = "slow words from a thinking model"


@dataclass
class Setup:
    gw: ServedGateway
    slow: FakeOpenAI


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with FakeOpenAI(mode="slow_stream", slow_seconds=0.2, reply_text=WORDS) as slow:
        config = {
            "sandbox": {"enabled": True},
            "limits": {"stream_keepalive": 0.05},
            "providers": [
                {"name": "slow", "protocol": "openai", "base_url": slow.base_url, "api_key": "sk-slow-up"},
            ],
            "models": [{"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}]}],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("responses-limits")), config=config) as gw:
            yield Setup(gw, slow)


def test_requests_per_minute_count_responses_calls(up: Setup) -> None:
    client = openai.OpenAI(base_url=up.gw.base_url + "/v1", api_key=up.gw.create_key(rpm=2), max_retries=0)
    first = client.responses.with_raw_response.create(model="sandbox-chat", input="one")
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    client.responses.create(model="sandbox-chat", input="two", stream=True).close()
    with pytest.raises(openai.RateLimitError) as refused:
        client.responses.create(model="sandbox-chat", input="three")
    body = refused.value.body
    assert isinstance(body, dict) and body.get("code") == "rate_limit_exceeded"
    wait = float(refused.value.response.headers["retry-after"])
    assert 0 < wait <= 31
    # A background response is admitted the same way, when it is accepted: refused at once.
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="sandbox-chat", input="four", background=True)


def test_a_background_response_is_counted_once(up: Setup) -> None:
    client = openai.OpenAI(base_url=up.gw.base_url + "/v1", api_key=up.gw.create_key(rpm=2), max_retries=0)
    accepted = client.responses.with_raw_response.create(model="sandbox-chat", input="one", background=True)
    assert accepted.headers["x-ratelimit-remaining-requests"] == "1"
    response_id = accepted.parse().id
    deadline = time.monotonic() + 10
    while client.responses.retrieve(response_id).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.responses.retrieve(response_id).status == "completed"
    client.responses.create(model="sandbox-chat", input="two")  # the run itself took no second request
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="sandbox-chat", input="three")


def test_tokens_per_minute_count_the_whole_conversation(up: Setup) -> None:
    key = up.gw.create_key(tpm=400)
    client = openai.OpenAI(base_url=up.gw.base_url + "/v1", api_key=key, max_retries=0)
    first = client.responses.with_raw_response.create(
        model="sandbox-chat", input="word " * 150, max_output_tokens=20
    )
    assert first.headers["x-ratelimit-limit-tokens"] == "400"
    remaining = int(first.headers["x-ratelimit-remaining-tokens"])
    assert remaining < 400 - 150  # the prompt was counted, and the answer settled
    # The next turn carries the stored conversation: its estimate is over what is left.
    with pytest.raises(openai.RateLimitError):
        client.responses.create(
            model="sandbox-chat",
            input="word " * 100,
            previous_response_id=first.parse().id,
            max_output_tokens=20,
        )


def test_a_quiet_translated_stream_carries_comments_the_sdk_skips(up: Setup) -> None:
    client = openai.OpenAI(base_url=up.gw.base_url + "/v1", api_key=up.gw.create_key(), max_retries=0)
    with client.responses.with_streaming_response.create(
        model="slow-chat", input="Think slowly", stream=True
    ) as r:
        raw = b"".join(r.iter_bytes())
    assert raw.count(b": keep-alive\n\n") >= 3  # 0.2 s silences, comments every 0.05 s
    assert b"[DONE]" not in raw and b"response.completed" in raw
    events = list(client.responses.create(model="slow-chat", input="Think slowly", stream=True))
    assert events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output_text.split() == WORDS.split()
