"""What the real server writes to its log: one access line per request (never key material),
and a warning for every upstream failure, fallback, cooldown, failed task and failed webhook."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.net import http
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from unigate.auth.keys import display_prefix, hash_key

FAST_MUSIC = {
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [{"name": "chirp-v4", "routes": [{"provider": "sandbox"}]}],
    "sandbox": {"music_seconds": 1.0},
    "tasks": {"poll_interval": 0.3, "max_poll_interval": 0.5, "webhook_retry_schedule": [0, 0.3, 0.3, 0.5]},
}


def _access_lines(gw: ServedGateway, request_line: str) -> list[str]:
    return [line for line in gw.log().splitlines() if "unigate.access" in line and request_line in line]


def _wait_for_log(gw: ServedGateway, pattern: str, timeout: float = 15) -> re.Match[str]:
    """The first match of `pattern` in the log; lines can follow the answer by a moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, gw.log())
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no log line matches {pattern!r}:\n{gw.log()}")


def _chat(gw: ServedGateway, key: str, model: str = "sandbox-chat") -> Any:
    return http(
        "POST",
        gw.base_url + "/v1/chat/completions",
        {"model": model, "messages": [{"role": "user", "content": "hi"}]},
        {"Authorization": f"Bearer {key}"},
    )


def test_access_lines_carry_the_fields_and_no_key_material(
    gateway_factory: Callable[..., ServedGateway],
) -> None:
    gw = gateway_factory()
    record = gw.create_key_record(name="logs")
    key, key_id = str(record["key"]), str(record["id"])

    ok = _chat(gw, key)
    assert ok.status == 200
    rid = ok.headers["x-request-id"]
    line = _wait_for_log(gw, rf"unigate\.access: POST /v1/chat/completions 200 [^\n]*request={rid}\b").group()
    assert re.search(r" \d+\.\d\dms ", line)
    assert "model=sandbox-chat" in line
    assert re.search(r"route=[\w.-]+/sandbox-chat ", line)
    assert f"key={key_id} " in line

    assert _chat(gw, key + "x").status == 401
    assert _chat(gw, key, model="no-such-model").status == 404
    assert http("GET", gw.base_url + "/v1/nowhere", headers={"Authorization": f"Bearer {key}"}).status == 404
    # Gemini clients may put the key in the query string: the logged path never has one.
    gemini = http(
        "POST",
        f"{gw.base_url}/v1beta/models/sandbox-chat:generateContent?key={key}",
        {"contents": [{"parts": [{"text": "hi"}]}]},
    )
    assert gemini.status == 200

    # Lines are written just after the answer: wait for the last request's.
    _wait_for_log(gw, r"unigate\.access: POST /v1beta/models/sandbox-chat:generateContent 200 ")
    rejected = _access_lines(gw, "POST /v1/chat/completions 401 ")
    assert len(rejected) == 1 and "key=- " in rejected[0] and "route=- " in rejected[0]
    unknown = _access_lines(gw, "POST /v1/chat/completions 404 ")
    assert (
        len(unknown) == 1 and "model=no-such-model route=- " in unknown[0] and f"key={key_id} " in unknown[0]
    )
    assert len(_access_lines(gw, "GET /v1/nowhere 404 ")) == 1
    via_query = _access_lines(gw, "POST /v1beta/models/sandbox-chat:generateContent 200 ")
    assert len(via_query) == 1 and f"key={key_id} " in via_query[0]
    assert len(_access_lines(gw, "POST /v1/chat/completions 200 ")) == 1, "one line per request"

    log = gw.log()
    for secret in (key, key[4:], key[:20], display_prefix(key).rstrip("…"), hash_key(key)):
        assert secret not in log


@pytest.fixture
def two_fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI(reply_text="from primary") as first, FakeOpenAI(reply_text="from secondary") as second:
        yield first, second


def test_upstream_failures_fallback_cooldown_and_give_up_are_logged(
    gateway_factory: Callable[..., ServedGateway], two_fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    first, second = two_fakes
    first.mode = "fail500"
    gw = gateway_factory(
        {
            "providers": [
                {
                    "name": "first",
                    "protocol": "openai",
                    "base_url": first.base_url,
                    "api_key": "sk-first-secret",
                },
                {
                    "name": "second",
                    "protocol": "openai",
                    "base_url": second.base_url,
                    "api_key": "sk-2nd-secret",
                },
            ],
            "models": [
                {
                    "name": "m",
                    "routes": [
                        {"provider": "first", "model": "up-1", "priority": 0},
                        {"provider": "second", "model": "up-2", "priority": 1},
                    ],
                }
            ],
            "routing": {"cooldown_after_failures": 1, "cooldown_seconds": 30},
        }
    )
    key = gw.create_key()

    assert _chat(gw, key, "m").json()["choices"][0]["message"]["content"] == "from secondary"
    _wait_for_log(gw, r"route first/up-1 failed: [^\n]*HTTP 500[^\n]*; falling back to route second/up-2")
    _wait_for_log(gw, r"route first/up-1 cooling down for 30 s after 1 consecutive failure")
    _wait_for_log(gw, r"unigate\.access: POST /v1/chat/completions 200 [^\n]*model=m route=second/up-2 ")

    # Now both fail: the cooled route is tried last, and the router gives up.
    second.mode = "fail500"
    assert _chat(gw, key, "m").status == 502
    _wait_for_log(gw, r"route second/up-2 failed: [^\n]*HTTP 500[^\n]*; falling back to route first/up-1")
    _wait_for_log(gw, r"route first/up-1 failed: [^\n]*HTTP 500[^\n]*; giving up, all 2 routes failed")
    _wait_for_log(gw, r"unigate\.access: POST /v1/chat/completions 502 [^\n]*model=m route=- ")
    log = gw.log()
    assert "sk-first-secret" not in log and "sk-2nd-secret" not in log


def _submit_music(gw: ServedGateway, key: str, prompt: str, hook: str = "") -> str:
    body = {"prompt": prompt, "title": "Logs", "tags": "folk", "mv": "chirp-v4"}
    if hook:
        body["notify_hook"] = hook
    res = http("POST", gw.base_url + "/suno/submit/music", body, {"Authorization": f"Bearer {key}"})
    assert res.status == 200, res.body
    return str(res.json()["data"]["task_id"])


def test_a_task_failure_is_logged(gateway_factory: Callable[..., ServedGateway]) -> None:
    gw = gateway_factory(FAST_MUSIC)
    key = gw.create_key()
    task_id = _submit_music(gw, key, "[Verse]\nThis one breaks [sandbox:fail]")
    _wait_for_log(gw, r"unigate\.access: POST /suno/submit/music 200 [^\n]*key=key_")
    _wait_for_log(
        gw, rf"task {task_id} \(music MUSIC, provider sandbox, upstream id \S+\) failed \[\w+\]: '.+'"
    )


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    hook = WebhookReceiver().start()
    yield hook
    hook.stop()


def test_a_failed_webhook_attempt_is_logged(
    gateway_factory: Callable[..., ServedGateway], receiver: WebhookReceiver
) -> None:
    gw = gateway_factory(FAST_MUSIC, env={"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"})
    receiver.fail_next = 1  # the first delivery gets a 500, the retry goes through
    task_id = _submit_music(gw, gw.create_key(), "a song about logs", f"{receiver.url}?token=hook-secret")
    _wait_for_log(
        gw,
        rf"webhook \S+ for task {task_id}: attempt 1 failed \(HTTP 500\); "
        r"next attempt in [\d.]+ s at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
    )
    assert "hook-secret" not in gw.log(), "webhook URLs (and the tokens in them) are not logged"
