"""Every client SDK against every upstream protocol, through one real gateway process.

client ∈ {openai, anthropic, google-genai} x upstream ∈ {fake OpenAI-compatible, fake
Anthropic, fake Gemini} x {plain, streaming, tool-call round trip, streamed tool call}. Each
cell asserts what the client sees: text, tool name and arguments, finish reason, usage.
Same-format cells (anthropic→anthropic, gemini→gemini, openai→openai) are pass-through, the
others translated; the cells look identical from the client's side, which is the point.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import ADMIN_KEY
from tests.support.net import http
from tests.support.served import ServedGateway

UPSTREAMS = ("openai", "anthropic", "gemini")
CLIENTS = ("openai", "anthropic", "genai")
# What each fake upstream answers: text, prompt tokens, completion tokens.
EXPECTED = {
    "openai": ("Hello from the fake upstream", 11, 7),
    "anthropic": ("Hello from the fake Anthropic upstream", 21, 9),
    "gemini": ("Hello from the fake Gemini upstream", 17, 8),
}
# The finish reason each client format uses for (a text answer, a tool call).
FINISH = {"openai": ("stop", "tool_calls"), "anthropic": ("end_turn", "tool_use"), "genai": ("STOP", "STOP")}


@dataclass
class Seen:
    """What a client got back, in neutral terms."""

    text: str = ""
    finish: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_name: str = ""
    tool_args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Rig:
    gw: ServedGateway
    key: str
    fakes: dict[str, Any]


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with FakeOpenAI() as oa, FakeAnthropic() as an, FakeGemini() as ge:
        config = {
            "providers": [
                {"name": "oa", "protocol": "openai", "base_url": oa.base_url, "api_key": "sk-oa"},
                {"name": "an", "protocol": "anthropic", "base_url": an.base_url, "api_key": "sk-an"},
                {"name": "ge", "protocol": "gemini", "base_url": ge.base_url, "api_key": "sk-ge"},
            ],
            "models": [
                {"name": f"via-{up}", "routes": [{"provider": p, "model": f"{up}-upstream-model"}]}
                for up, p in (("openai", "oa"), ("anthropic", "an"), ("gemini", "ge"))
            ],
            "limits": {"stream_keepalive": 0.05},
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("matrix")), config=config) as gw:
            yield Rig(gw, gw.create_key(), {"openai": oa, "anthropic": an, "gemini": ge})


# --- the three clients, each reduced to the same four operations -------------------------

WEATHER_OPENAI: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
WEATHER_ANTHROPIC: Any = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEATHER_GENAI = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather in a city",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"city": types.Schema(type=types.Type.STRING)},
                required=["city"],
            ),
        )
    ]
)
QUESTION = "What is the weather in Paris?"


class OpenAIClient:
    def __init__(self, rig: Rig) -> None:
        self.c = openai.OpenAI(base_url=rig.gw.base_url + "/v1", api_key=rig.key, max_retries=0)

    def plain(self, model: str) -> Seen:
        r = self.c.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        )
        assert r.usage is not None
        return Seen(
            r.choices[0].message.content or "",
            r.choices[0].finish_reason,
            r.usage.prompt_tokens,
            r.usage.completion_tokens,
        )

    def stream(self, model: str, tools: bool = False) -> Seen:
        seen = Seen()
        args = ""
        for chunk in self.c.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": QUESTION if tools else "Hi"}],
            stream=True,
            stream_options={"include_usage": True},
            **({"tools": [WEATHER_OPENAI]} if tools else {}),
        ):
            if chunk.usage is not None:
                seen.prompt_tokens, seen.completion_tokens = (
                    chunk.usage.prompt_tokens,
                    chunk.usage.completion_tokens,
                )
            for choice in chunk.choices:
                seen.text += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    assert call.index == 0
                    if call.function and call.function.name:
                        seen.tool_name = call.function.name
                    args += (call.function.arguments or "") if call.function else ""
                seen.finish = choice.finish_reason or seen.finish
        seen.tool_args = json.loads(args) if args else {}
        return seen

    def tool_round_trip(self, model: str) -> tuple[Seen, Seen]:
        messages: Any = [{"role": "user", "content": QUESTION}]
        first = self.c.chat.completions.create(model=model, messages=messages, tools=[WEATHER_OPENAI])
        call = (first.choices[0].message.tool_calls or [])[0]
        assert call.type == "function"
        seen = Seen(
            finish=first.choices[0].finish_reason,
            tool_name=call.function.name,
            tool_args=json.loads(call.function.arguments),
        )
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C"},
        ]
        second = self.c.chat.completions.create(model=model, messages=messages, tools=[WEATHER_OPENAI])
        return seen, Seen(second.choices[0].message.content or "", second.choices[0].finish_reason)


class AnthropicClient:
    def __init__(self, rig: Rig) -> None:
        self.c = anthropic.Anthropic(base_url=rig.gw.base_url, api_key=rig.key, max_retries=0)

    def plain(self, model: str) -> Seen:
        m = self.c.messages.create(
            model=model, max_tokens=100, system="Be brief.", messages=[{"role": "user", "content": "Hi"}]
        )
        text = "".join(b.text for b in m.content if b.type == "text")
        return Seen(text, m.stop_reason or "", m.usage.input_tokens, m.usage.output_tokens)

    def stream(self, model: str, tools: bool = False) -> Seen:
        with self.c.messages.stream(
            model=model,
            max_tokens=100,
            messages=[{"role": "user", "content": QUESTION if tools else "Hi"}],
            **({"tools": [WEATHER_ANTHROPIC]} if tools else {}),
        ) as stream:
            text = "".join(stream.text_stream)
            m = stream.get_final_message()
        seen = Seen(text, m.stop_reason or "", m.usage.input_tokens, m.usage.output_tokens)
        for block in m.content:
            if block.type == "tool_use":
                seen.tool_name, seen.tool_args = block.name, dict(block.input)  # type: ignore[arg-type]
        return seen

    def tool_round_trip(self, model: str) -> tuple[Seen, Seen]:
        messages: Any = [{"role": "user", "content": QUESTION}]
        first = self.c.messages.create(
            model=model, max_tokens=100, tools=[WEATHER_ANTHROPIC], messages=messages
        )
        use = next(b for b in first.content if b.type == "tool_use")
        seen = Seen(finish=first.stop_reason or "", tool_name=use.name, tool_args=dict(use.input))  # type: ignore[arg-type]
        messages += [
            {"role": "assistant", "content": first.content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 24 C"}],
            },
        ]
        second = self.c.messages.create(
            model=model, max_tokens=100, tools=[WEATHER_ANTHROPIC], messages=messages
        )
        text = "".join(b.text for b in second.content if b.type == "text")
        return seen, Seen(text, second.stop_reason or "")


class GenAIClient:
    def __init__(self, rig: Rig) -> None:
        self.c = genai.Client(api_key=rig.key, http_options=types.HttpOptions(base_url=rig.gw.base_url))

    @staticmethod
    def _finish(resp: types.GenerateContentResponse) -> str:
        reason = resp.candidates[0].finish_reason if resp.candidates else None
        return reason.value if reason else ""

    def plain(self, model: str) -> Seen:
        r = self.c.models.generate_content(
            model=model, contents="Hi", config=types.GenerateContentConfig(system_instruction="Be brief.")
        )
        meta = r.usage_metadata
        assert meta is not None
        return Seen(
            r.text or "", self._finish(r), meta.prompt_token_count or 0, meta.candidates_token_count or 0
        )

    def stream(self, model: str, tools: bool = False) -> Seen:
        config = types.GenerateContentConfig(tools=[WEATHER_GENAI]) if tools else None
        seen = Seen()
        for chunk in self.c.models.generate_content_stream(
            model=model, contents=QUESTION if tools else "Hi", config=config
        ):
            seen.text += "".join(
                p.text or "" for c in chunk.candidates or [] for p in (c.content and c.content.parts) or []
            )
            for call in chunk.function_calls or []:
                seen.tool_name, seen.tool_args = call.name or "", dict(call.args or {})
            seen.finish = self._finish(chunk) or seen.finish
            if chunk.usage_metadata and chunk.usage_metadata.prompt_token_count:
                seen.prompt_tokens = chunk.usage_metadata.prompt_token_count
                seen.completion_tokens = chunk.usage_metadata.candidates_token_count or 0
        return seen

    def tool_round_trip(self, model: str) -> tuple[Seen, Seen]:
        config = types.GenerateContentConfig(tools=[WEATHER_GENAI])
        first = self.c.models.generate_content(model=model, contents=QUESTION, config=config)
        call = (first.function_calls or [])[0]
        seen = Seen(finish=self._finish(first), tool_name=call.name or "", tool_args=dict(call.args or {}))
        assert first.candidates and first.candidates[0].content
        contents = [
            types.Content(role="user", parts=[types.Part(text=QUESTION)]),
            first.candidates[0].content,
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name="get_weather", response={"result": "sunny, 24 C"})
                ],
            ),
        ]
        second = self.c.models.generate_content(model=model, contents=contents, config=config)
        return seen, Seen(second.text or "", self._finish(second))


CLIENT_TYPES: dict[str, Callable[[Rig], Any]] = {
    "openai": OpenAIClient,
    "anthropic": AnthropicClient,
    "genai": GenAIClient,
}
CELLS = [(c, u) for c in CLIENTS for u in UPSTREAMS]
IDS = [f"{c}-client-{u}-upstream" for c, u in CELLS]


# --- the matrix -------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "upstream"), CELLS, ids=IDS)
def test_plain(rig: Rig, client: str, upstream: str) -> None:
    seen = CLIENT_TYPES[client](rig).plain(f"via-{upstream}")
    text, prompt, completion = EXPECTED[upstream]
    assert (seen.text, seen.finish) == (text, FINISH[client][0])
    assert (seen.prompt_tokens, seen.completion_tokens) == (prompt, completion)


@pytest.mark.parametrize(("client", "upstream"), CELLS, ids=IDS)
def test_streaming(rig: Rig, client: str, upstream: str) -> None:
    seen = CLIENT_TYPES[client](rig).stream(f"via-{upstream}")
    text, prompt, completion = EXPECTED[upstream]
    assert (seen.text.strip(), seen.finish) == (text, FINISH[client][0])
    assert (seen.prompt_tokens, seen.completion_tokens) == (prompt, completion)


@pytest.mark.parametrize(("client", "upstream"), CELLS, ids=IDS)
def test_tool_call_round_trip(rig: Rig, client: str, upstream: str) -> None:
    call, answer = CLIENT_TYPES[client](rig).tool_round_trip(f"via-{upstream}")
    assert (call.tool_name, call.tool_args, call.finish) == (
        "get_weather",
        {"city": "Paris"},
        FINISH[client][1],
    )
    assert "24" in answer.text and answer.finish == FINISH[client][0]


@pytest.mark.parametrize(("client", "upstream"), CELLS, ids=IDS)
def test_streamed_tool_call(rig: Rig, client: str, upstream: str) -> None:
    seen = CLIENT_TYPES[client](rig).stream(f"via-{upstream}", tools=True)
    assert (seen.tool_name, seen.tool_args, seen.finish) == (
        "get_weather",
        {"city": "Paris"},
        FINISH[client][1],
    )
    _, prompt, completion = EXPECTED[upstream]
    assert (seen.prompt_tokens, seen.completion_tokens) == (prompt, completion)


# --- long upstream silences: keep-alives in each client's own framing ----------------------

KEEPALIVE = {"openai": b": keep-alive\n\n", "anthropic": b"event: ping\n", "genai": b"\n\r\n"}


@pytest.mark.parametrize("client", CLIENTS)
def test_keepalive_during_upstream_silence_is_invisible_to_the_sdk(rig: Rig, client: str) -> None:
    fake = rig.fakes["openai"]
    fake.mode, fake.slow_seconds = "slow_stream", 0.18  # > 3 keep-alive intervals per gap
    try:
        seen = CLIENT_TYPES[client](rig).stream("via-openai")
    finally:
        fake.mode = "ok"
    text, prompt, completion = EXPECTED["openai"]
    assert (seen.text.strip(), seen.prompt_tokens, seen.completion_tokens) == (text, prompt, completion)


@pytest.mark.parametrize("client", CLIENTS)
def test_keepalive_bytes_are_on_the_wire(rig: Rig, client: str) -> None:
    fake = rig.fakes["openai"]
    fake.mode, fake.slow_seconds = "slow_stream", 0.18
    try:
        raw = _raw_stream(rig, client, "via-openai")
    finally:
        fake.mode = "ok"
    assert raw.count(KEEPALIVE[client]) >= 3


def _raw_stream(rig: Rig, client: str, model: str) -> bytes:
    import http.client

    path, body, headers = _stream_request(rig, client, model)
    conn = http.client.HTTPConnection("127.0.0.1", rig.gw.port, timeout=20)
    conn.request("POST", path, json.dumps(body), {**headers, "Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    data = resp.read()
    conn.close()
    return data


def _stream_request(rig: Rig, client: str, model: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    user = [{"role": "user", "content": "Hi"}]
    if client == "openai":
        return "/v1/chat/completions", {"model": model, "stream": True, "messages": user}, _bearer(rig)
    if client == "anthropic":
        return (
            "/v1/messages",
            {"model": model, "stream": True, "max_tokens": 50, "messages": user},
            _bearer(rig),
        )
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    return f"/v1beta/models/{model}:streamGenerateContent?alt=sse", body, {"x-goog-api-key": rig.key}


def _bearer(rig: Rig) -> dict[str, str]:
    return {"Authorization": f"Bearer {rig.key}"}


# --- a client leaving mid-stream: upstream cancelled, partial usage still accounted --------


@pytest.mark.parametrize(
    ("client", "upstream"), [("anthropic", "anthropic"), ("genai", "gemini"), ("openai", "gemini")]
)
def test_disconnect_cancels_upstream_and_records_partial_usage(rig: Rig, client: str, upstream: str) -> None:
    import http.client
    import time

    fake = rig.fakes[upstream]
    fake.mode, fake.slow_seconds, fake.cancelled = "slow", 0.3, 0
    model = f"via-{upstream}"
    before = _usage(rig, model)
    try:
        path, body, headers = _stream_request(rig, client, model)
        conn = http.client.HTTPConnection("127.0.0.1", rig.gw.port, timeout=10)
        conn.request("POST", path, json.dumps(body), {**headers, "Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read1(64)  # the stream has started
        time.sleep(0.5)  # let a couple more events through
        resp.close()
        conn.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and fake.cancelled == 0:
            time.sleep(0.05)
        assert fake.cancelled == 1, "the gateway kept reading upstream after the client left"
    finally:
        fake.mode = "ok"
    after = _usage(rig, model)
    _, prompt, completion = EXPECTED[upstream]
    assert after["requests"] == before["requests"] + 1
    assert after["prompt_tokens"] - before["prompt_tokens"] == prompt  # known from the first event
    assert 0 < after["completion_tokens"] - before["completion_tokens"] < completion  # partial


def _usage(rig: Rig, model: str) -> dict[str, int]:
    res = http("GET", f"{rig.gw.base_url}/admin/usage", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert res.status == 200
    rows = [r for r in res.json()["data"] if r["model"] == model]
    return {k: sum(r[k] for r in rows) for k in ("requests", "prompt_tokens", "completion_tokens")}


def test_gemini_to_gemini_is_relayed_untouched(rig: Rig) -> None:
    fake = rig.fakes["gemini"]
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "generationConfig": {"topK": 3, "candidateCount": 1, "responseMimeType": "text/plain"},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc",  # a field the canonical form has no place for
    }
    res = http(
        "POST",
        f"{rig.gw.base_url}/v1beta/models/via-gemini:generateContent",
        body,
        {"x-goog-api-key": rig.key},
    )
    assert res.status == 200
    call, received, headers = fake.received[-1]
    assert call == "gemini-upstream-model:generateContent?" and received == body
    assert headers["x-goog-api-key"] == "sk-ge" and rig.key not in str(headers)
    assert res.json()["modelVersion"] == "gemini-upstream-model"  # the upstream's own answer, as is
