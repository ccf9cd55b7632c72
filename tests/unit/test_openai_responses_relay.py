"""The `openai` adapter's native Responses relay (providers/openai/responses.py) against the fake
native upstream: the `responses` config key, URLs (OpenAI and Azure's v1 surface with its query),
the body forwarded byte for byte with only the model id mapped, usage from the answer and from
`response.completed`, a broken stream, error mapping with secrets scrubbed, and the lookups."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

from tests.support.fake_openai_responses import FakeOpenAIResponses
from unigate.config import ConfigError, ProviderConfig
from unigate.config_source import load_config
from unigate.errors import UpstreamFailed, UpstreamRejected
from unigate.providers.base import (
    ProviderContext,
    Reply,
    RouteFailed,
    StreamBroken,
    Target,
    Timeouts,
    Unsupported,
)
from unigate.providers.openai.azure import AzureOpenAIProvider
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.providers.openai.responses import RESPONSES_FORMAT, _ends, _read_endings, body_usage
from unigate.providers.redact import Redactor
from unigate.providers.same_format import request_body
from unigate.usage.recorder import Usage

SECRET = "sk-upstream-secret-0123456789"
TIMEOUTS = Timeouts(connect=2.0, read=5.0, total=10.0)
UPSTREAM = "upstream-resp-v2"
T = TypeVar("T")


@pytest.fixture
def fake() -> Iterator[FakeOpenAIResponses]:
    with FakeOpenAIResponses() as server:
        yield server


def with_provider(
    tmp_path: Path,
    base_url: str,
    use: Callable[[OpenAIProvider, Target], Awaitable[T]],
    protocol: str = "openai",
) -> T:
    config = ProviderConfig(
        name="native", protocol=protocol, base_url=base_url, api_key=SECRET, responses="native"
    )
    cls = AzureOpenAIProvider if protocol == "azure" else OpenAIProvider

    async def main() -> T:
        provider = cls(config, ProviderContext(data_dir=tmp_path))
        try:
            return await use(provider, Target(provider, UPSTREAM, TIMEOUTS, f"native/{UPSTREAM}"))
        finally:
            await provider.aclose()

    return asyncio.run(main())


async def drain(reply: Reply) -> bytes:
    assert reply.stream is not None
    out = b""
    async for run in reply.stream:
        out += run
    return out


# -- configuration --


def _config(tmp_path: Path, provider: str) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(f"providers:\n  - {provider}\nmodels: []\n")
    return path


def test_responses_key(tmp_path: Path) -> None:
    plain = load_config(_config(tmp_path, "{name: a, protocol: openai}"), {})
    assert plain.providers[0].responses == "translate"
    native = load_config(_config(tmp_path, "{name: a, protocol: azure, responses: native}"), {})
    assert native.providers[0].responses == "native"
    with pytest.raises(ConfigError, match=r"providers\[0\]: responses: native is for `openai` and `azure`"):
        load_config(_config(tmp_path, "{name: a, protocol: anthropic, responses: native}"), {})
    # A dumped default config writes `translate` for every provider: that must load.
    translated = load_config(_config(tmp_path, "{name: a, protocol: anthropic, responses: translate}"), {})
    assert translated.providers[0].responses == "translate"
    with pytest.raises(ConfigError, match=r"providers\[0\]\.responses: Input should be 'native' or"):
        load_config(_config(tmp_path, "{name: a, protocol: openai, responses: natively}"), {})
    deployment = "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21"
    with pytest.raises(ConfigError, match=r"native on azure needs base_url .*/openai/v1"):
        load_config(
            _config(tmp_path, f"{{name: a, protocol: azure, responses: native, base_url: '{deployment}'}}"),
            {},
        )


def test_native_format_only_when_configured(tmp_path: Path) -> None:
    context = ProviderContext(data_dir=tmp_path)
    translate = OpenAIProvider(ProviderConfig(name="a", protocol="openai"), context)
    native = OpenAIProvider(ProviderConfig(name="b", protocol="openai", responses="native"), context)
    assert RESPONSES_FORMAT not in translate.native_formats and RESPONSES_FORMAT in native.native_formats
    assert OpenAIProvider.native_formats == frozenset()  # the class itself is unchanged


# -- the request body --


def test_request_body_splices_only_the_model() -> None:
    raw = b'{"input":"hi","metadata":{"k":"v"},"model":"gw-model","temperature":0.5}'
    payload = orjson.loads(raw)
    assert request_body(payload, "gw-model", raw) is raw  # unchanged model: the same bytes
    assert request_body(payload, "up", raw) == raw.replace(b'"model":"gw-model"', b'"model":"up"')
    spaced = b'{ "model" : "gw-model",\n "input": "h\xc3\xa9" }'
    assert request_body(orjson.loads(spaced), "up", spaced) == b'{ "model" : "up",\n "input": "h\xc3\xa9" }'


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"gw","metadata":{"model":"gw"}}',  # a nested "model" key: two matches
        b'{"mod\\u0065l":"gw","metadata":{"model":"gw"}}',  # an escaped top-level key
        b'{"model":"gw","model":"gw"}',  # a duplicate key
    ],
)
def test_request_body_falls_back_to_reserialising(raw: bytes) -> None:
    body = orjson.loads(request_body(orjson.loads(raw), "up", raw))
    assert body["model"] == "up"
    assert body.get("metadata", {"model": "gw"}) == {"model": "gw"}


def test_body_usage_reads_the_top_level_usage() -> None:
    data = orjson.dumps(
        {"usage": {"input_tokens": 12, "output_tokens": 7}, "metadata": {"usage": '"input_tokens": 0'}}
    )
    usage = body_usage(data)
    assert (usage.prompt_tokens, usage.completion_tokens) == (12, 7)
    assert body_usage(b"not json").prompt_tokens == 0
    assert body_usage(b'{"usage": {"input_tokens": -3, "output_tokens": "9"}}').completion_tokens == 0


# -- create --


def test_create_relays_bytes_and_reads_usage(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    raw = b'{"input":"Tell me about rivers","instructions":"Be terse.","model":"gw-model"}'

    async def use(provider: OpenAIProvider, target: Target) -> Reply:
        return await provider.responses_create(orjson.loads(raw), target, False, raw)

    reply = with_provider(tmp_path, fake.base_url, use)
    seen = fake.received[-1]
    assert (seen.method, seen.path, seen.query) == ("POST", "/v1/responses", "")
    assert seen.raw == raw.replace(b'"gw-model"', f'"{UPSTREAM}"'.encode())
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    answer = orjson.loads(reply.body)
    assert reply.status == 200 and reply.wire == RESPONSES_FORMAT and reply.stream is None
    assert answer["model"] == UPSTREAM and answer["status"] == "completed"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (
        answer["usage"]["input_tokens"],
        answer["usage"]["output_tokens"],
    )


def test_native_hook_reserialises_the_payload(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    payload = {"model": "gw-model", "input": "hi", "store": False}

    async def use(provider: OpenAIProvider, target: Target) -> Reply:
        return await provider.native(payload, target, False)

    with_provider(tmp_path, fake.base_url, use)
    assert fake.received[-1].raw == orjson.dumps({**payload, "model": UPSTREAM})


def test_stream_usage_from_completed_event(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    async def use(provider: OpenAIProvider, target: Target) -> tuple[Reply, bytes]:
        reply = await provider.native({"model": "gw", "input": "Say hello", "stream": True}, target, True)
        return reply, await drain(reply)

    reply, body = with_provider(tmp_path, fake.base_url, use)
    assert reply.content_type.startswith(b"text/event-stream") and reply.wire == RESPONSES_FORMAT
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed" and b"[DONE]" not in body
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (
        final["usage"]["input_tokens"],
        final["usage"]["output_tokens"],
    )


def test_stream_death_is_broken_and_counts_deltas(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    fake.mode, fake.die_after = "die_mid", 6  # created, in_progress, added, part added, 2 deltas

    async def use(provider: OpenAIProvider, target: Target) -> tuple[Reply, bytes, BaseException | None]:
        reply = await provider.native({"model": "gw", "input": "Say hello", "stream": True}, target, True)
        got = b""
        assert reply.stream is not None
        try:
            async for run in reply.stream:
                got += run
        except StreamBroken as exc:
            return reply, got, exc
        return reply, got, None

    reply, got, error = with_provider(tmp_path, fake.base_url, use)
    assert isinstance(error, StreamBroken) and got.count(b"response.output_text.delta\n") == 2
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (0, 2)


async def _first_error(provider: OpenAIProvider, target: Target) -> BaseException:
    try:
        await provider.native({"model": "gw", "input": "hi"}, target, False)
    except (RouteFailed, UpstreamRejected) as exc:
        return exc
    raise AssertionError("no error")


def test_create_errors_follow_the_adapter_contract(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    fake.mode = "fail500"
    failed = with_provider(tmp_path, fake.base_url, _first_error)
    assert isinstance(failed, RouteFailed) and failed.status == 502
    fake.mode = "fail429"
    limited = with_provider(tmp_path, fake.base_url, _first_error)
    assert isinstance(limited, RouteFailed) and (limited.status, limited.retry_after) == (429, "7")
    fake.mode = "reject400"
    rejected = with_provider(tmp_path, fake.base_url, _first_error)
    assert isinstance(rejected, UpstreamRejected) and rejected.status == 400
    assert rejected.raw_openai_body is not None and SECRET not in rejected.raw_openai_body.decode()
    assert SECRET not in rejected.message and "[redacted]" in rejected.message


def test_translate_provider_does_not_relay(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    async def main() -> None:
        provider = OpenAIProvider(
            ProviderConfig(name="t", protocol="openai", base_url=fake.base_url), ProviderContext(tmp_path)
        )
        try:
            with pytest.raises(Unsupported, match="does not support native requests"):
                await provider.native(
                    {"model": "m", "input": "x"}, Target(provider, "m", TIMEOUTS, "t/m"), False
                )
        finally:
            await provider.aclose()

    asyncio.run(main())
    assert fake.received == []


# -- lookups --


def test_lookups(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    async def use(provider: OpenAIProvider, target: Target) -> dict[str, Any]:
        made = orjson.loads(
            (
                await provider.native({"model": "gw", "input": "One two", "background": True}, target, False)
            ).body
        )
        rid = made["id"]
        out: dict[str, Any] = {"id": rid}
        await asyncio.sleep(fake.background_seconds * 1.5)
        out["get"] = await provider.responses_get(rid)
        out["items"] = await provider.responses_input_items(rid, {"limit": "1", "order": "asc"})
        out["stream"] = await drain(
            await provider.responses_get(rid, [("stream", "true"), ("starting_after", "3")])
        )
        out["cancel"] = await provider.responses_cancel(rid)
        out["delete"] = await provider.responses_delete(rid)
        try:
            await provider.responses_get(rid)
        except UpstreamRejected as exc:
            out["gone"] = exc
        return out

    out = with_provider(tmp_path, fake.base_url, use)
    rid = out["id"]
    calls = [(s.method, s.path, s.query) for s in fake.received[1:]]
    assert calls == [
        ("GET", f"/v1/responses/{rid}", ""),
        ("GET", f"/v1/responses/{rid}/input_items", "limit=1&order=asc"),
        ("GET", f"/v1/responses/{rid}", "stream=true&starting_after=3"),
        ("POST", f"/v1/responses/{rid}/cancel", ""),
        ("DELETE", f"/v1/responses/{rid}", ""),
        ("GET", f"/v1/responses/{rid}", ""),
    ]
    got = orjson.loads(out["get"].body)
    assert (
        got["status"] == "completed" and out["get"].usage.completion_tokens == got["usage"]["output_tokens"]
    )
    assert orjson.loads(out["items"].body)["data"][0]["content"][0]["text"] == "One two"
    assert b'"sequence_number":4' in out["stream"] and b"response.completed" in out["stream"]
    assert orjson.loads(out["cancel"].body)["status"] == "completed"  # too late to cancel: unchanged
    assert orjson.loads(out["delete"].body) == {"id": rid, "object": "response", "deleted": True}
    gone = out["gone"]
    assert gone.status == 404 and gone.raw_openai_body is not None and b"not found" in gone.raw_openai_body


def test_lookup_failures_are_ready_to_render(tmp_path: Path, fake: FakeOpenAIResponses) -> None:
    async def use(provider: OpenAIProvider, target: Target) -> list[BaseException]:
        errors: list[BaseException] = []
        for mode in ("fail500", "fail429", "reject400"):
            fake.mode = mode
            try:
                await provider.responses_get("resp_x")
            except (UpstreamFailed, UpstreamRejected) as exc:
                errors.append(exc)
        return errors

    failed, limited, rejected = with_provider(tmp_path, fake.base_url, use)
    assert isinstance(failed, UpstreamFailed) and failed.status == 502
    assert isinstance(limited, UpstreamFailed) and limited.status == 429
    assert limited.headers == {"retry-after": "7"}
    assert isinstance(rejected, UpstreamRejected) and SECRET not in rejected.message
    assert rejected.raw_openai_body is not None and SECRET.encode() not in rejected.raw_openai_body


# -- Azure --


def test_azure_v1_surface_with_query(tmp_path: Path) -> None:
    with FakeOpenAIResponses(prefix="/openai/v1") as azure:

        async def use(provider: OpenAIProvider, target: Target) -> AsyncIterator[bytes] | None:
            made = await provider.native({"model": "gw", "input": "hi"}, target, False)
            rid = orjson.loads(made.body)["id"]
            await provider.responses_input_items(rid, {"limit": "2"})
            return None

        with_provider(tmp_path, azure.base_url + "?api-version=preview", use, protocol="azure")
        create, items = azure.received
    assert (create.path, create.query) == ("/openai/v1/responses", "api-version=preview")
    assert create.headers["api-key"] == SECRET and "authorization" not in create.headers
    assert create.body["model"] == UPSTREAM  # on Azure's v1 surface: the deployment's name
    assert items.path.endswith("/input_items") and items.query == "limit=2&api-version=preview"


def test_stream_endings_read_and_error_events_scrubbed() -> None:
    redactor = Redactor([SECRET])
    created = b'event: response.created\ndata: {"type":"response.created","response":{"error":null}}\n\n'
    delta = b'data: {"type":"response.output_text.delta","delta":"\\"type\\":\\"error\\""}\n\n'
    assert not _ends(created) and not _ends(delta)  # `"error":null` and quoted text are no ending
    error = orjson.dumps({"type": "error", "code": "server_error", "message": f"bad key {SECRET}"})
    usage = Usage()
    run, final = _read_endings(created + b"event: error\ndata: " + error + b"\n\n", usage, redactor)
    assert final and SECRET.encode() not in run and run.startswith(created)
    failed = orjson.dumps(
        {
            "type": "response.failed",
            "response": {
                "error": {"message": f"Bearer {SECRET}"},
                "usage": {"input_tokens": 4, "output_tokens": 1},
            },
        }
    )
    run, final = _read_endings(b"data: " + failed + b"\r\n\r\n", usage, redactor)
    assert final and SECRET.encode() not in run and run.endswith(b"\r\n\r\n")
    assert (usage.prompt_tokens, usage.completion_tokens) == (4, 1)
