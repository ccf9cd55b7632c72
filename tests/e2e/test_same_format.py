"""Same-format pass-through for Anthropic and Gemini clients, against the real gateway and fake
upstreams: the upstream receives the client's body bytes (only the model id replaced), its query
string and its `anthropic-beta` / `anthropic-version` headers, plain and streaming; a request the
translator refuses still reaches a same-format route; translated routes name what they dropped;
token counts ask the upstream that can count; translated streams start with the input count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import orjson
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.net import HTTPResult, free_port, http
from tests.support.served import ServedGateway
from tests.support.waits import until

BETAS = "context-management-2025-06-27,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
# Not what a serialiser would write back: key order, spacing, a `\u` escape, and a nested
# `model` key (a tool schema), so any re-serialisation shows.
MESSAGES_BODY = (
    b'{ "messages": [{"role": "system", "content": "env: linux"},'
    b' {"role": "user", "content": [{"type": "text", "text": "caf\\u00e9?"},'
    b' {"type": "fancy_future_block", "x": 1}]}],\n'
    b'  "tools": [{"name": "Task", "input_schema": {"type": "object",'
    b' "properties": {"model": {"type": "string"}}}}],'
    b'  "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},'
    b'  "model":"claude-chat" , "max_tokens": 64 %s}'
)


class Setup:
    def __init__(self, gw: ServedGateway, claude: FakeAnthropic, gemini: FakeGemini) -> None:
        self.gw, self.claude, self.gemini = gw, claude, gemini
        self.key = gw.create_key()

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> HTTPResult:
        return http(
            "POST",
            self.gw.base_url + path,
            body,
            {"x-api-key": self.key, "content-type": "application/json", **(headers or {})},
        )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with FakeAnthropic() as claude, FakeGemini() as gemini:
        config: dict[str, Any] = {
            "sandbox": {"enabled": True},
            "providers": [
                {
                    "name": "claude",
                    "protocol": "anthropic",
                    "base_url": claude.base_url,
                    "api_key": "sk-ant-up",
                },
                {"name": "gem", "protocol": "gemini", "base_url": gemini.base_url, "api_key": "AIza-up"},
                # An Anthropic-compatible host without count_tokens (404), and one that is down.
                {"name": "nocount", "protocol": "anthropic", "base_url": gemini.base_url, "api_key": "x"},
                {"name": "down", "protocol": "anthropic", "base_url": f"http://127.0.0.1:{free_port()}"},
            ],
            "models": [
                {"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up-1"}]},
                {"name": "gem-chat", "routes": [{"provider": "gem", "model": "gemini-up-2"}]},
                {"name": "nocount-chat", "routes": [{"provider": "nocount"}]},
                {"name": "down-chat", "routes": [{"provider": "down"}]},
                # Translated first (the sandbox), then a same-format route.
                {
                    "name": "mixed",
                    "routes": [
                        {"provider": "sandbox", "model": "sandbox-chat", "priority": 1},
                        {"provider": "claude", "model": "claude-up-1", "priority": 2},
                    ],
                },
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("same-format")), config=config) as gw:
            yield Setup(gw, claude, gemini)


# -- Anthropic clients to an Anthropic upstream -------------------------------------------------


def test_messages_relay_the_client_bytes_query_and_beta_headers(setup: Setup) -> None:
    body = MESSAGES_BODY % b""
    res = setup.post(
        "/v1/messages?beta=true",
        body,
        {"anthropic-beta": BETAS, "anthropic-version": "2023-06-01", "x-stainless-lang": "js"},
    )
    assert res.status == 200, res.body
    assert res.json()["id"] == "msg_fake"  # the upstream's own answer
    assert "x-unigate-dropped-fields" not in res.headers
    fake = setup.claude
    assert fake.raw[-1] == body.replace(b'"claude-chat"', b'"claude-up-1"')
    assert fake.queries[-1] == "beta=true"
    sent = fake.headers[-1]
    assert sent["anthropic-beta"] == BETAS and sent["anthropic-version"] == "2023-06-01"
    assert sent["x-api-key"] == "sk-ant-up" and "x-stainless-lang" not in sent


def test_messages_stream_relays_bytes_and_accounts_usage(setup: Setup) -> None:
    body = MESSAGES_BODY % b', "stream": true'
    res = setup.post("/v1/messages", body, {"anthropic-beta": "interleaved-thinking-2025-05-14"})
    assert res.status == 200 and res.headers["content-type"].startswith("text/event-stream")
    assert res.body.startswith(b"event: message_start\ndata: ")
    assert b'"usage": {"input_tokens": 21' in res.body or b'"input_tokens":21' in res.body
    assert res.body.rstrip().endswith(b'{"type":"message_stop"}')
    fake = setup.claude
    assert fake.raw[-1] == body.replace(b'"claude-chat"', b'"claude-up-1"')
    assert fake.queries[-1] == ""
    # The client sent no version: the adapter's default goes upstream.
    assert fake.headers[-1]["anthropic-version"] == "2023-06-01"
    assert fake.headers[-1]["anthropic-beta"] == "interleaved-thinking-2025-05-14"

    def accounted() -> dict[str, Any] | None:  # once the usage flush has run
        rows = setup.gw.admin("GET", "/admin/usage?group_by=model").json()["data"]
        return next((r for r in rows if r["model"] == "claude-chat"), None)

    row = until(accounted, "the stream's usage row")
    assert row["prompt_tokens"] >= 21 and row["completion_tokens"] >= 9


def test_sdk_beta_client_reaches_the_upstream_with_its_betas(setup: Setup) -> None:
    client = anthropic.Anthropic(base_url=setup.gw.base_url, api_key=setup.key, max_retries=0)
    with client.beta.messages.stream(
        model="claude-chat",
        max_tokens=64,
        betas=["context-management-2025-06-27"],
        messages=[{"role": "user", "content": "Hi"}],
    ) as stream:
        text = "".join(stream.text_stream)
    assert text.strip() == "Hello from the fake Anthropic upstream"
    assert setup.claude.headers[-1]["anthropic-beta"] == "context-management-2025-06-27"
    assert orjson.loads(setup.claude.raw[-1])["model"] == "claude-up-1"


def test_a_request_the_translator_refuses_still_reaches_the_anthropic_route(setup: Setup) -> None:
    # A structured-output format the chat form cannot express: the sandbox (first route)
    # cannot take it, so the Anthropic route does, with the client's bytes.
    body = (
        b'{"model": "mixed", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}],'
        b' "output_config": {"format": {"type": "grammar", "grammar": "root ::= x"}}}'
    )
    res = setup.post("/v1/messages", body)
    assert res.status == 200, res.body
    assert res.json()["id"] == "msg_fake"
    assert setup.claude.raw[-1] == body.replace(b'"mixed"', b'"claude-up-1"')
    # Routed only to the translated route, the refusal is the client's 400, in Anthropic's shape.
    alone = setup.post("/v1/messages", body.replace(b'"mixed"', b'"sandbox-chat"'))
    assert alone.status == 400
    assert alone.json()["error"]["type"] == "invalid_request_error"
    assert "output_config.format" in alone.json()["error"]["message"]


def test_a_translated_route_names_what_it_dropped(setup: Setup) -> None:
    body = (
        MESSAGES_BODY.replace(b'"claude-chat"', b'"mixed"')
        % b', "temperature": 0.3, "thinking": {"type": "adaptive"}'
    )
    res = setup.post("/v1/messages", body)
    assert res.status == 200, res.body
    assert res.json()["id"].startswith("msg_") and res.json()["id"] != "msg_fake"  # the sandbox answered
    assert res.headers["x-unigate-dropped-fields"] == (
        "context_management, messages.content.fancy_future_block, temperature, thinking"
    )


# -- token counts ---------------------------------------------------------------------------------


def test_count_tokens_asks_the_anthropic_upstream(setup: Setup) -> None:
    body = b'{"messages": [{"role": "user", "content": "Hi"}], "model": "claude-chat"}'
    res = setup.post("/v1/messages/count_tokens?beta=true", body, {"anthropic-beta": BETAS})
    sent = body.replace(b'"claude-chat"', b'"claude-up-1"')
    assert res.status == 200 and res.json() == {"input_tokens": 1000 + len(sent)}
    assert res.headers["x-unigate-token-count"] == "upstream"
    assert setup.claude.counted[-1] == sent
    assert setup.claude.queries[-1] == "beta=true" and setup.claude.headers[-1]["anthropic-beta"] == BETAS


def test_count_tokens_asks_gemini_for_a_gemini_route(setup: Setup) -> None:
    body = {"model": "gem-chat", "system": "Brief.", "messages": [{"role": "user", "content": "Hi"}]}
    res = setup.post("/v1/messages/count_tokens", orjson.dumps(body))
    assert res.status == 200 and res.headers["x-unigate-token-count"] == "upstream"
    path, sent, _ = setup.gemini.received[-1]
    assert path == "gemini-up-2:countTokens?"
    request = sent["generateContentRequest"]
    assert request["model"] == "models/gemini-up-2"
    assert request["systemInstruction"]["parts"][0]["text"] == "Brief."
    assert res.json() == {"input_tokens": 2000 + len(setup.gemini.raw[-1])}


def test_count_tokens_estimates_for_the_sandbox(setup: Setup) -> None:
    body = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "Hello there"}]}
    res = setup.post("/v1/messages/count_tokens", orjson.dumps(body))
    assert res.status == 200 and res.headers["x-unigate-token-count"] == "estimated"
    sent = setup.post("/v1/messages", orjson.dumps({**body, "max_tokens": 20}))
    assert res.json()["input_tokens"] == sent.json()["usage"]["input_tokens"]


@pytest.mark.parametrize("model", ["nocount-chat", "down-chat"])
def test_count_tokens_estimates_when_the_upstream_cannot_count(setup: Setup, model: str) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "Hello there"}]}
    res = setup.post("/v1/messages/count_tokens", orjson.dumps(body))
    assert res.status == 200, res.body
    assert res.headers["x-unigate-token-count"] == "estimated"
    assert res.json()["input_tokens"] > 0


def test_gemini_count_tokens_on_every_kind_of_route(setup: Setup) -> None:
    key = {"x-goog-api-key": setup.key}
    body = b'{"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}'
    native = http(
        "POST", setup.gw.base_url + f"/v1beta/models/gem-chat:countTokens?key={setup.key}", body, key
    )
    assert native.status == 200 and native.json() == {"totalTokens": 2000 + len(body)}
    assert native.headers["x-unigate-token-count"] == "upstream"
    assert setup.gemini.raw[-1] == body and setup.gemini.received[-1][0] == "gemini-up-2:countTokens?"
    to_claude = http("POST", setup.gw.base_url + "/v1/models/claude-chat:countTokens", body, key)
    assert to_claude.status == 200 and to_claude.headers["x-unigate-token-count"] == "upstream"
    counted = orjson.loads(setup.claude.counted[-1])
    assert counted == {"model": "claude-up-1", "messages": [{"role": "user", "content": "Hi"}]}
    assert to_claude.json() == {"totalTokens": 1000 + len(setup.claude.counted[-1])}
    local = http("POST", setup.gw.base_url + "/v1beta/models/sandbox-chat:countTokens", body, key)
    assert local.headers["x-unigate-token-count"] == "estimated"
    answer = http("POST", setup.gw.base_url + "/v1beta/models/sandbox-chat:generateContent", body, key)
    assert local.json()["totalTokens"] == answer.json()["usageMetadata"]["promptTokenCount"]


# -- Gemini clients to a Gemini upstream ------------------------------------------------------------


def test_generate_content_relays_the_client_bytes_and_query(setup: Setup) -> None:
    # googleSearch has no chat form: translating would refuse it, a Gemini route takes it as is.
    body = b'{"contents":[{"parts":[{"text":"Hi"}]}],  "tools": [{"googleSearch": {}}]}'
    url = setup.gw.base_url + f"/v1beta/models/gem-chat:generateContent?key={setup.key}&prettyPrint=false"
    res = http("POST", url, body, {"content-type": "application/json"})
    assert res.status == 200, res.body
    assert res.json()["responseId"] == "resp-1"
    assert setup.gemini.raw[-1] == body
    path, _, headers = setup.gemini.received[-1]
    assert path == "gemini-up-2:generateContent?prettyPrint=false"  # the gateway's key stays here
    assert headers["x-goog-api-key"] == "AIza-up"


def test_stream_generate_content_relays_bytes_and_reads_usage(setup: Setup) -> None:
    body = b'{"contents": [{"role": "user", "parts": [{"text": "Stream"}]}]}'
    url = setup.gw.base_url + "/v1/models/gem-chat:streamGenerateContent?alt=sse"
    res = http("POST", url, body, {"x-goog-api-key": setup.key})
    assert res.status == 200 and b'"finishReason"' in res.body
    assert setup.gemini.raw[-1] == body
    assert setup.gemini.received[-1][0] == "gemini-up-2:streamGenerateContent?alt=sse"


# -- translated Anthropic streams --------------------------------------------------------------------


def test_translated_stream_starts_with_the_input_count(setup: Setup) -> None:
    client = anthropic.Anthropic(base_url=setup.gw.base_url, api_key=setup.key, max_retries=0)
    for model, expected in (("gem-chat", 17), ("sandbox-chat", None)):
        with client.messages.stream(
            model=model, max_tokens=32, messages=[{"role": "user", "content": "Count my words please"}]
        ) as stream:
            first = next(iter(stream))
            final = stream.get_final_message()
        assert first.type == "message_start"
        started = first.message.usage.input_tokens
        assert started > 0 and started == (expected or final.usage.input_tokens)
