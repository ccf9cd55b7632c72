"""Requests and tokens per minute, against the real server: exact at the boundary across the
workers of one `serve`, honest Retry-After, x-ratelimit-* headers on every response of a
limited key, real tokens corrected into the window (streams included), per-model limits for
all keys, every family counted, and a limit change applied without a restart."""

from __future__ import annotations

import contextlib
import io
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.net import HTTPResult, http
from tests.support.readme import section
from tests.support.served import ServedGateway

Gateway = ServedGateway | GatewayProcess

CHAT = "/v1/chat/completions"


def _config() -> dict[str, Any]:
    quota = {"name": "quota-chat", "rpm": 3, "routes": [{"provider": "sandbox", "model": "sandbox-chat"}]}
    return {"models": [quota], "sandbox": {"enabled": True, "music_seconds": 1}}


# In-process (one worker) by default; the full run also holds them across two worker processes.
@pytest.fixture(scope="module", params=["served", pytest.param("2-workers", marks=pytest.mark.process)])
def gw(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    workdir = Path(tmp_path_factory.mktemp("limits"))
    if request.param == "served":
        with ServedGateway(workdir, config=_config()) as served:
            yield served
        return
    with GatewayProcess(workdir, config=_config(), workers=2) as g:
        yield g


def _chat(gw: Gateway, key: str, content: str = "hi", **extra: Any) -> HTTPResult:
    body = {"model": "sandbox-chat", "messages": [{"role": "user", "content": content}], **extra}
    return http("POST", gw.base_url + CHAT, body, {"Authorization": f"Bearer {key}"})


def _burst(gw: Gateway, key: str, n: int, **extra: Any) -> list[HTTPResult]:
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda _: _chat(gw, key, **extra), range(n)))


def test_rpm_is_exact_across_workers_and_retry_after_is_honest(gw: Gateway) -> None:
    key = gw.create_key(rpm=10)
    started = time.monotonic()
    results = _burst(gw, key, 30)
    assert time.monotonic() - started < 6, "the burst must end before one unit comes back (6 s)"
    ok = [r for r in results if r.status == 200]
    refused = [r for r in results if r.status == 429]
    print(f"rpm=10, 2 workers, 30 concurrent: {len(ok)} allowed, {len(refused)} refused")
    assert len(ok) == 10 and len(refused) == 20
    for r in ok:
        assert r.headers["x-ratelimit-limit-requests"] == "10"
        assert 0 <= int(r.headers["x-ratelimit-remaining-requests"]) <= 9
        assert r.headers["x-ratelimit-reset-requests"]
    error = refused[0].json()["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "rate_limit_exceeded"
    wait = int(refused[-1].headers["retry-after"])
    assert 1 <= wait <= 6
    time.sleep(wait)
    assert _chat(gw, key).status == 200, "a client that waits the advertised seconds is admitted"
    assert _chat(gw, key).status == 429


def test_tokens_are_estimated_then_corrected_streams_included(gw: Gateway) -> None:
    key = gw.create_key(tpm=300)
    started = time.monotonic()
    first = _chat(gw, key, max_tokens=200)
    assert first.status == 200
    # Admission's view: the prompt's tokens and the whole max_tokens were taken.
    assert first.headers["x-ratelimit-limit-tokens"] == "300"
    assert int(first.headers["x-ratelimit-remaining-tokens"]) <= 99
    used = first.json()["usage"]["total_tokens"]
    assert used < 100
    # The real usage replaced the estimate: there is room for another 200-token cap now,
    # which there would not be had the estimate stayed.
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="sandbox-chat",
        messages=[{"role": "user", "content": "tell me a story"}],
        max_tokens=200,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    streamed = next(c.usage for c in chunks if c.usage is not None)
    assert streamed is not None
    # The stream's real tokens were corrected in too: the counter's view (a request that
    # takes nothing: the model list) shows what the two calls really used.
    models = http("GET", gw.base_url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
    remaining = int(models.headers["x-ratelimit-remaining-tokens"])
    # Tokens flow back at 300/min (5 a second) meanwhile: as many as that on a slow machine.
    refilled = math.ceil(5 * (time.monotonic() - started))
    spent = used + streamed.total_tokens
    assert 300 - spent - 2 <= remaining <= 300 - spent + refilled
    # An estimate larger than what is left waits; one larger than the whole limit never fits.
    refused = _chat(gw, key, max_tokens=290)
    assert refused.status == 429 and int(refused.headers["retry-after"]) >= 1
    too_big = _chat(gw, key, max_tokens=5000)
    assert too_big.status == 429 and too_big.json()["error"]["code"] == "request_too_large"
    assert "retry-after" not in too_big.headers


def test_headers_on_every_response_of_a_limited_key(gw: Gateway) -> None:
    key = gw.create_key(rpm=100, tpm=10_000)
    auth = {"Authorization": f"Bearer {key}"}
    responses = {
        "models": http("GET", gw.base_url + "/v1/models", headers=auth),
        "bad request": http("POST", gw.base_url + CHAT, {"model": "sandbox-chat"}, auth),
        "unknown model": http(
            "POST",
            gw.base_url + CHAT,
            {"model": "nope", "messages": [{"role": "user", "content": "x"}]},
            auth,
        ),
        "music submit": http(
            "POST", gw.base_url + "/suno/submit/music", {"prompt": "la", "mv": "chirp-v4"}, auth
        ),
    }
    task_id = responses["music submit"].json()["data"]["task_id"]
    responses["music fetch"] = http("GET", gw.base_url + f"/suno/fetch/{task_id}", headers=auth)
    for name, res in responses.items():
        for what in ("requests", "tokens"):
            for field in ("limit", "remaining", "reset"):
                assert f"x-ratelimit-{field}-{what}" in res.headers, (name, res.status, res.headers)
    unlimited = gw.create_key()
    plain = http("GET", gw.base_url + "/v1/models", headers={"Authorization": f"Bearer {unlimited}"})
    assert "x-ratelimit-limit-requests" not in plain.headers


def test_every_family_counts(gw: Gateway) -> None:
    key = gw.create_key(rpm=2)
    auth = {"Authorization": f"Bearer {key}"}
    statuses = [
        http(
            "POST", gw.base_url + "/suno/submit/music", {"prompt": f"song {i}", "mv": "chirp-v4"}, auth
        ).status
        for i in range(10)
    ]
    print("music submits on a 2 RPM key:", statuses)
    assert statuses.count(200) == 2 and statuses.count(429) == 8
    refused = http("POST", gw.base_url + "/suno/submit/music", {"prompt": "x", "mv": "chirp-v4"}, auth)
    body = refused.json()
    assert refused.status == 429 and body["data"] is None and body["code"] == "rate_limit_exceeded"
    speech = http(
        "POST",
        gw.base_url + "/v1/audio/speech",
        {"model": "sandbox-tts", "input": "hi", "voice": "alloy"},
        auth,
    )
    assert speech.status == 429 and speech.json()["error"]["type"] == "rate_limit_error"


def test_a_model_limit_protects_the_upstream_across_keys(gw: Gateway) -> None:
    keys = [gw.create_key() for _ in range(3)]
    body = {"model": "quota-chat", "messages": [{"role": "user", "content": "x"}]}
    statuses = [
        http("POST", gw.base_url + CHAT, body, {"Authorization": f"Bearer {keys[i % 3]}"}).status
        for i in range(6)
    ]
    assert statuses.count(200) == 3 and statuses.count(429) == 3
    # A per-model limit is not a key's: those keys' own responses carry no key headers.
    res = http("POST", gw.base_url + CHAT, body, {"Authorization": f"Bearer {keys[0]}"})
    assert res.status == 429 and "the model 'quota-chat'" in res.json()["error"]["message"]


@pytest.mark.process  # runs the `unigate` CLI
def test_a_limit_change_applies_without_restart(gw: Gateway, tmp_path: Path) -> None:
    record = gw.create_key_record(rpm=2)
    key, key_id = record["key"], record["id"]
    assert [_chat(gw, key).status for _ in range(3)] == [200, 200, 429]
    changed = gw.admin("PATCH", f"/admin/keys/{key_id}", {"rpm": 50, "tpm": 100_000})
    assert changed.status == 200 and changed.json()["rpm"] == 50 and changed.json()["tpm"] == 100_000
    _wait_for(lambda: _chat(gw, key).status == 200)
    res = _chat(gw, key)
    assert res.headers["x-ratelimit-limit-requests"] == "50"
    # The CLI changes the same record on the same database.
    cli = subprocess.run(
        [sys.executable, "-m", "unigate", "keys", "update", key_id, "--rpm", "1"],
        env={**gw.env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    assert "rpm=1" in cli.stdout
    _wait_for(lambda: _chat(gw, key).headers.get("x-ratelimit-limit-requests") == "1")
    bad = gw.admin("PATCH", f"/admin/keys/{key_id}", {"rpm": True})
    assert bad.status == 400 and bad.json()["error"]["param"] == "rpm"
    cleared = gw.admin("PATCH", f"/admin/keys/{key_id}", {"rpm": None, "tpm": None})
    assert cleared.status == 200 and cleared.json()["rpm"] is None


def _wait_for(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("the change did not apply in time")


def test_readme_example(gw: Gateway) -> None:
    found = re.search(r"```python\n(.*?)```", section("Limits and budgets", page="limits"), re.S)
    assert found
    code = found.group(1).replace("http://127.0.0.1:8000", gw.base_url).replace('"uga_..."', repr(ADMIN_KEY))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/limits.md", "exec"), {})
    remaining_requests, remaining_tokens = out.getvalue().splitlines()[0].split()
    assert remaining_requests == "59" and 19_900 < int(remaining_tokens) < 20_000
    assert out.getvalue().splitlines()[1] == "600"
