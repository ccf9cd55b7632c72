"""Every adapter maps an upstream's failed answer the same way: one table
(`providers/upstream_status.py`), run here over every status that has its own row and one of
each class, for every adapter and each kind of call it makes (chat, media, native relays, job
submits and polls, downloads), against a tiny scripted upstream answering the vendor's own error
body with `Retry-After: 7`. What each vendor's body says is read by the vendor (its message is
relayed on a rejection); what the status means is the same everywhere."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from unigate.config import ProviderConfig
from unigate.edge.multipart import Form
from unigate.errors import UpstreamRejected
from unigate.providers.base import (
    MediaCall,
    Provider,
    ProviderContext,
    RouteFailed,
    Target,
    TaskRef,
    TaskSubmission,
    TextCall,
    Timeouts,
)
from unigate.providers.google import veo
from unigate.providers.openai import videos
from unigate.providers.registry import protocol_class
from unigate.providers.same_format import ClientRequest
from unigate.providers.tasks import kling, picwish, vidu
from unigate.providers.upstream_status import client_error

SECRET = "sk-status-table-secret-0123456789"
TIMEOUTS = Timeouts(connect=2.0, read=5.0, total=10.0)
WHY = "the vendor's reason"


@dataclass(frozen=True)
class Outcome:
    """What the adapter raises: its class, the client's status, the Retry-After it keeps."""

    route_failed: bool
    status: int
    retry_after: str | None = None


# The gateway's documented policy (the upstream table of docs/endpoints.md), status by status.
EXPECTED = {
    302: Outcome(True, 502),  # a redirect is a misconfigured base_url, not an answer
    400: Outcome(False, 400),
    401: Outcome(True, 502),  # the gateway's credentials: never the client's fault
    403: Outcome(True, 502),
    404: Outcome(True, 502),  # no API at that path: a base_url missing its /v1, most often
    408: Outcome(True, 504),
    409: Outcome(False, 400),  # SDKs retry a 409: relayed as a refusal they do not repeat
    413: Outcome(False, 413),
    422: Outcome(False, 422),
    429: Outcome(True, 429, "7"),
    500: Outcome(True, 502),
    502: Outcome(True, 502),
    503: Outcome(True, 503, "7"),
    504: Outcome(True, 502),
    529: Outcome(True, 502),  # Anthropic's "overloaded"
}


# -- each vendor's error body --


def openai_body(status: int) -> Any:
    return {"error": {"message": WHY, "type": "invalid_request_error", "param": None, "code": "bad"}}


def anthropic_body(status: int) -> Any:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": WHY}}


def google_body(status: int) -> Any:
    return {"error": {"code": status, "message": WHY, "status": "INVALID_ARGUMENT"}}


def fish_body(status: int) -> Any:
    return {"status": status, "message": WHY}


def stability_body(status: int) -> Any:
    return {"id": "e1", "name": "bad_request", "errors": [WHY]}


def suno_body(status: int) -> Any:
    return {"code": "error", "message": WHY, "data": None}


def kling_body(status: int) -> Any:
    # A Kling-compatible relay's answer without a service code: the HTTP status decides.
    return {"message": WHY, "request_id": "r1"}


def vidu_body(status: int) -> Any:
    return {"code": status, "reason": "SomethingWrong", "message": WHY, "metadata": {}}


def picwish_body(status: int) -> Any:
    return {"status": status, "message": WHY}


# -- each adapter's calls --

Call = Callable[[Provider], Awaitable[object]]


def target(provider: Provider, model: str = "up-model") -> Target:
    return Target(provider, model, TIMEOUTS, "route")


def text_call(stream: bool) -> TextCall:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return TextCall("chat", orjson.dumps(payload), payload, "m", stream)


def chat(stream: bool = False) -> Call:
    return lambda p: p.chat(text_call(stream), target(p))


def media(op: str, payload: dict[str, Any], form: Form | None = None, variant: str = "") -> Call:
    call = MediaCall(op, "m", payload, form=form, raw=orjson.dumps(payload), variant=variant)
    return lambda p: p.media(call, target(p))


def native(payload: dict[str, Any], stream: bool = False) -> Call:
    client = ClientRequest(orjson.dumps(payload), "", {})
    return lambda p: p.native(payload, target(p), stream, client)


def submit(family: str, action: str, fields: dict[str, Any]) -> Call:
    job = TaskSubmission(family, action, "m", fields)
    return lambda p: p.submit_task(job, target(p))


def poll(upstream_id: str, action: str) -> Call:
    return lambda p: p.poll_tasks([TaskRef(upstream_id, action)], TIMEOUTS)


async def poll_raising(refs: Sequence[TaskRef], query: Any, vendor: str, limit: int = 8) -> dict[str, Any]:
    """`poll_each` without its safety net (it logs a failed query and leaves the job out): the
    query's own error, for the table to be checked on."""
    for ref in refs:
        await query(ref)
    return {}


def content(upstream_id: str, output: dict[str, Any]) -> Call:
    return lambda p: p.task_content(TaskRef(upstream_id, "text2video"), output, "video", TIMEOUTS)


@dataclass(frozen=True)
class Case:
    name: str
    protocol: str
    body: Callable[[int], Any]
    call: Call
    config: dict[str, Any] | None = None
    lookup: bool = False  # names an existing object by id: its 404 is the object gone, relayed


CASES = [
    Case("openai chat", "openai", openai_body, chat()),
    Case("openai chat stream", "openai", openai_body, chat(stream=True)),
    Case("openai images", "openai", openai_body, media("images.generations", {"prompt": "a cat"})),
    Case(
        "openai responses",
        "openai",
        openai_body,
        native({"model": "m", "input": "hi"}),
        {"responses": "native"},
    ),
    Case("openai video submit", "openai", openai_body, submit("video", "text2video", {"prompt": "p"})),
    Case("openai video poll", "openai", openai_body, poll("video_1", "text2video")),
    Case("openai video content", "openai", openai_body, content("video_1", {"id": "video_1"}), lookup=True),
    Case("azure chat", "azure", openai_body, chat()),
    Case("anthropic chat", "anthropic", anthropic_body, chat()),
    Case(
        "anthropic native",
        "anthropic",
        anthropic_body,
        native({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}),
    ),
    Case("gemini chat", "gemini", google_body, chat()),
    Case("gemini chat stream", "gemini", google_body, chat(stream=True)),
    Case("veo submit", "gemini", google_body, submit("veo", "text2video", {"prompt": "p"})),
    Case("veo poll", "gemini", google_body, poll("models/veo/operations/op1", "text2video")),
    Case("fish tts", "fish", fish_body, media("fish.tts", {"text": "hello"})),
    Case(
        "stability generate",
        "stability",
        stability_body,
        media("stability.generate", {"prompt": "a cat"}, Form(parts=[("prompt", "a cat")]), "core"),
    ),
    Case("suno submit", "suno", suno_body, submit("music", "MUSIC", {"prompt": "a song"})),
    Case("suno poll", "suno", suno_body, lambda p: p.poll_tasks([TaskRef("t1", "MUSIC")], TIMEOUTS)),
    Case("kling submit", "kling", kling_body, submit("kling", "text2video", {"prompt": "p"})),
    Case("kling poll", "kling", kling_body, poll("k1", "text2video")),
    Case("vidu submit", "vidu", vidu_body, submit("vidu", "text2audio", {"prompt": "rain"})),
    Case("vidu poll", "vidu", vidu_body, poll("8810", "text2audio")),
    Case(
        "picwish submit",
        "picwish",
        picwish_body,
        submit("picwish", "visual/segmentation", {"image_url": "https://i.test/a.png"}),
    ),
    Case("picwish poll", "picwish", picwish_body, poll("pw1", "visual/segmentation")),
]


HTML = b"<!doctype html><html><body><h1>Not here</h1></body></html>"


async def answer(case: Case, status: int, tmp_path: Path, html: bool = False) -> BaseException:
    """Run the case's call against an upstream that answers every request with `status` (with
    an HTML page instead of the vendor's error body when `html`)."""

    async def respond(request: web.Request) -> web.StreamResponse:
        await request.read()
        headers = {"Retry-After": "7"}
        if html:
            return web.Response(status=status, body=HTML, content_type="text/html")
        if 300 <= status < 400:
            return web.Response(status=status, headers={**headers, "Location": "https://elsewhere.test/"})
        return web.Response(
            status=status,
            body=orjson.dumps(case.body(status)),
            content_type="application/json",
            headers=headers,
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", respond)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = ProviderConfig(
        name="up",
        protocol=case.protocol,
        base_url=f"http://127.0.0.1:{port}",
        api_key=SECRET,
        **(case.config or {}),
    )
    provider = protocol_class(case.protocol)(config, ProviderContext(data_dir=tmp_path))
    try:
        await case.call(provider)
    except (RouteFailed, UpstreamRejected) as exc:
        return exc
    finally:
        await provider.aclose()
        await runner.cleanup()
    raise AssertionError(f"{case.name}: HTTP {status} raised nothing")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_adapter_maps_every_status_by_the_one_table(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (kling, vidu, picwish, veo, videos):
        monkeypatch.setattr(module, "poll_each", poll_raising)

    async def main() -> dict[int, BaseException]:
        return {status: await answer(case, status, tmp_path) for status in EXPECTED}

    raised = asyncio.run(main())
    for status, expected in EXPECTED.items():
        exc = raised[status]
        if status == 404 and case.lookup:
            expected = Outcome(False, 404)
        where = f"{case.name}, upstream HTTP {status}"
        if expected.route_failed:
            assert isinstance(exc, RouteFailed), (where, exc)
            assert (exc.status, exc.retry_after) == (expected.status, expected.retry_after), where
            assert WHY not in exc.message, where  # a route failure's words are the gateway's
        else:
            assert isinstance(exc, UpstreamRejected), (where, exc)
            assert exc.status == expected.status, where
            assert exc.message == WHY, where  # the vendor's own reason, as its body said it
        assert SECRET not in str(exc), where


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_page_that_is_not_json_is_a_route_failure_naming_status_path_and_base_url(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (kling, vidu, picwish, veo, videos):
        monkeypatch.setattr(module, "poll_each", poll_raising)

    async def main() -> dict[int, BaseException]:
        return {status: await answer(case, status, tmp_path, html=True) for status in (400, 404, 422)}

    for status, exc in asyncio.run(main()).items():
        where = f"{case.name}, an HTML {status}"
        assert isinstance(exc, RouteFailed) and exc.status == 502, (where, exc)
        assert f"(HTTP {status} at /" in exc.message, (where, exc.message)
        assert "base_url" in exc.message, (where, exc.message)


@pytest.mark.parametrize(
    ("status", "retry_after", "client_status", "code", "headers"),
    [
        (429, "7", 429, "upstream_rate_limited", {"retry-after": "7"}),
        (503, "7", 503, "upstream_unavailable", {"retry-after": "7"}),
        (504, None, 504, "upstream_timeout", {}),
        (502, "7", 502, "upstream_unavailable", {}),  # a 502 is not a "retry after" answer
        (418, None, 502, "upstream_unavailable", {}),  # no other status reaches the client
    ],
)
def test_a_failure_no_route_recovered_from_reaches_the_client_as_the_table_says(
    status: int, retry_after: str | None, client_status: int, code: str, headers: dict[str, str]
) -> None:
    err = client_error(RouteFailed("why", status, retry_after), "All upstream routes failed.")
    assert (err.status, err.code, err.headers) == (client_status, code, headers)
