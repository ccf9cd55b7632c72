"""Routing against real processes: fallback on 500 / refused connection / timeout, cooldown,
streaming fallback before the first byte, 4xx relayed without retry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.net import free_port, http
from tests.support.served import ServedGateway
from tests.support.waits import until


@pytest.fixture
def two_fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI(reply_text="from primary") as first, FakeOpenAI(reply_text="from secondary") as second:
        yield first, second


def _config(first_url: str, second_url: str, **routing: Any) -> dict[str, Any]:
    return {
        "providers": [
            {
                "name": "first",
                "protocol": "openai",
                "base_url": first_url,
                "api_key": "sk-1",
                "read_timeout": 1.0,
            },
            {"name": "second", "protocol": "openai", "base_url": second_url, "api_key": "sk-2"},
        ],
        "models": [
            {
                "name": "m",
                "routes": [{"provider": "first", "priority": 0}, {"provider": "second", "priority": 1}],
            }
        ],
        "routing": routing or {"cooldown_after_failures": 3, "cooldown_seconds": 30},
    }


def _client(gw: ServedGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)


def _ask(client: openai.OpenAI) -> str:
    resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    return resp.choices[0].message.content or ""


@pytest.mark.parametrize("mode", ["fail500", "fail429", "hang"])
def test_falls_back_when_first_route_fails(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI], mode: str
) -> None:
    first, second = two_fakes
    first.mode = mode
    gw = gateway_factory(_config(first.base_url, second.base_url))
    assert _ask(_client(gw)) == "from secondary"
    assert len(first.received) == 1 and len(second.received) == 1


def test_falls_back_when_first_route_refuses_connections(
    gateway_factory: Callable[..., ServedGateway], fake_openai: FakeOpenAI
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    fake_openai.reply_text = "from secondary"
    gw = gateway_factory(_config(dead, fake_openai.base_url))
    assert _ask(_client(gw)) == "from secondary"


def test_cooldown_skips_a_failing_route(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    first.mode = "fail500"
    gw = gateway_factory(
        _config(first.base_url, second.base_url, cooldown_after_failures=2, cooldown_seconds=2)
    )
    client = _client(gw)
    for _ in range(5):
        assert _ask(client) == "from secondary"
    assert len(first.received) == 2, "after 2 failures the first route is cooled down"
    health = gw.admin("GET", "/admin/models").json()["data"][0]["routes"][0]["health"]
    assert health["cooldown_remaining"] > 0
    first.mode = "ok"
    # After the cooldown the first route is tried again (each call meanwhile goes to the second).
    until(lambda: _ask(client) == "from primary", "the first route to be tried again", 5, 0.1)


@pytest.mark.parametrize("mode", ["die_first", "fail500"])
def test_streaming_falls_back_before_first_byte(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI], mode: str
) -> None:
    first, second = two_fakes
    first.mode = mode
    gw = gateway_factory(_config(first.base_url, second.base_url))
    stream = _client(gw).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.strip() == "from secondary"
    assert len(first.received) == 1


def test_stream_dying_mid_way_ends_with_in_band_error(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    first.mode = "die_mid"
    gw = gateway_factory(_config(first.base_url, second.base_url))
    stream = _client(gw).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError):
        for _ in stream:
            pass
    assert len(second.received) == 0, "bytes were already relayed: no fallback"


def test_upstream_4xx_is_relayed_not_retried(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    first.mode = "reject400"
    gw = gateway_factory(_config(first.base_url, second.base_url))
    with pytest.raises(openai.BadRequestError) as info:
        _ask(_client(gw))
    assert "upstream says the request is bad" in str(info.value)
    assert len(second.received) == 0


def test_all_routes_failing_gives_502_in_openai_shape(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    first.mode = second.mode = "fail500"
    gw = gateway_factory(_config(first.base_url, second.base_url))
    key = gw.create_key()
    res = http(
        "POST",
        gw.base_url + "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 502
    err = res.json()["error"]
    assert err["type"] == "upstream_error" and "sk-1" not in res.body.decode()


def test_weights_spread_load_within_a_priority(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    config = _config(first.base_url, second.base_url)
    config["models"][0]["routes"] = [
        {"provider": "first", "weight": 3},
        {"provider": "second", "weight": 1},
    ]
    gw = gateway_factory(config)
    client = _client(gw)
    for _ in range(60):
        _ask(client)
    assert 30 <= len(first.received) <= 57 and len(second.received) >= 3


def test_client_disconnect_cancels_the_upstream_stream(
    gateway_factory: Callable[..., ServedGateway], fake_openai: FakeOpenAI
) -> None:
    import http.client
    import json
    import time

    fake_openai.mode = "slow_stream"
    fake_openai.slow_seconds = 0.3
    gw = gateway_factory(_config(fake_openai.base_url, fake_openai.base_url))
    key = gw.create_key()
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    conn.request(
        "POST",
        "/v1/chat/completions",
        body,
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read1(64)  # the stream has started
    resp.close()  # the client goes away mid-stream
    conn.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and fake_openai.cancelled == 0:
        time.sleep(0.05)
    assert fake_openai.cancelled == 1, "the gateway dropped the upstream request when the client left"


def test_client_leaving_a_non_streaming_call_cancels_the_upstream(
    gateway_factory: Callable[..., ServedGateway], fake_openai: FakeOpenAI
) -> None:
    """No stream to write to: the gateway notices the departure by watching the connection
    (from half a second into the call), drops the upstream request, and records a 499."""
    import json
    import socket
    import time

    fake_openai.mode = "hang"
    config = _config(fake_openai.base_url, fake_openai.base_url)
    # The first route's read timeout past the 2 s the cancel is allowed: on a loaded machine
    # the 1 s one could end the call first and fall back to the second route.
    config["providers"][0]["read_timeout"] = 4.0
    gw = gateway_factory(config)
    record = gw.create_key_record(name="leaver")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {record['key']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", gw.port)) as sock:
        sock.sendall(head + body)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not fake_openai.received:
            time.sleep(0.02)
        assert fake_openai.received, "the call reached the upstream"
    left = time.monotonic()  # the client is gone
    while time.monotonic() < left + 5 and fake_openai.cancelled == 0:
        time.sleep(0.05)
    assert fake_openai.cancelled == 1, "the upstream request was dropped"
    assert time.monotonic() - left < 2.0
    assert len(fake_openai.received) == 1, "and not retried on the other route"
    deadline = time.monotonic() + 5
    rows: list[dict[str, object]] = []
    while time.monotonic() < deadline and not rows:
        time.sleep(0.3)
        rows = [r for r in gw.admin("GET", "/admin/usage").json()["data"] if r["key_id"] == record["id"]]
    assert rows and rows[0]["requests"] == 1, rows
    access = [line for line in gw.log().splitlines() if "unigate.access" in line and "/v1/chat" in line]
    assert access and " 499 " in access[-1] and record["id"] in access[-1]
