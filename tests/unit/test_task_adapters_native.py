"""The Kling, Vidu and PicWish task adapters against a scripted loopback server: Kling's JWT,
request bodies (canonical fields and native pass-through), state mappings, error classes
(RouteFailed vs UpstreamRejected, Kling's code classes, PicWish's body status), per-job
polling with bounded concurrency, and that no secret reaches an exception message."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from unigate.config import ProviderConfig
from unigate.errors import InvalidRequest, UpstreamRejected
from unigate.providers.base import (
    InputFile,
    Provider,
    ProviderContext,
    RouteFailed,
    Target,
    TaskRef,
    TaskSubmission,
    Timeouts,
)
from unigate.providers.registry import PROTOCOLS, protocol_class
from unigate.providers.task_http import aspect_ratio, poll_each, scrub
from unigate.providers.tasks.kling import KlingKeys, KlingProvider, mint_jwt, request_body
from unigate.providers.tasks.kling import task_state as kling_state
from unigate.providers.tasks.picwish import PicWishProvider, form_fields
from unigate.providers.tasks.picwish import task_state as picwish_state
from unigate.providers.tasks.vidu import ViduProvider
from unigate.providers.tasks.vidu import request as vidu_request
from unigate.providers.tasks.vidu import task_state as vidu_state

ACCESS, SECRET = "AKtest1234access", "SKtest5678secret-very-private"
KLING_KEY = f"{ACCESS}:{SECRET}"
VIDU_KEY = "vda_secret_token_0123456789"
PICWISH_KEY = "wx_secret_key_abcdef0123"
SECRETS = (ACCESS, SECRET, KLING_KEY, VIDU_KEY, PICWISH_KEY)
TIMEOUTS = Timeouts(connect=2.0, read=5.0, total=10.0)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


# -- a scripted upstream in the test's own event loop --


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)

    def json(self) -> Any:
        return orjson.loads(self.body)


Answer = tuple[int, Any]  # (HTTP status, JSON-able body or raw bytes)


class Upstream:
    def __init__(self, respond: Callable[[Seen], Answer | Awaitable[Answer]]) -> None:
        self.respond = respond
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Upstream:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            seen = Seen(request.method, request.path_qs, dict(request.headers), b"")
            if request.content_type == "multipart/form-data":
                form = await request.post()
                for name, value in form.items():
                    if isinstance(value, web.FileField):
                        seen.files[name] = (value.filename, value.content_type, value.file.read())
                    else:
                        seen.form[name] = str(value)
            else:
                seen.body = await request.read()
            self.seen.append(seen)
            answer = self.respond(seen)
            status, body = await answer if asyncio.iscoroutine(answer) else answer  # type: ignore[misc]
            raw = body if isinstance(body, bytes) else orjson.dumps(body)
            return web.Response(status=status, body=raw, content_type="application/json")
        finally:
            self.in_flight -= 1


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def provider(cls: type[Provider], protocol: str, url: str, key: str, tmp: Path = Path(".")) -> Provider:
    config = ProviderConfig(name=f"{protocol}-test", protocol=protocol, base_url=url, api_key=key)
    return cls(config, ProviderContext(data_dir=tmp))


def target(p: Provider, model: str) -> Target:
    return Target(provider=p, upstream_model=model, timeouts=TIMEOUTS, route_key=f"{p.name}/{model}")


async def submit(p: Provider, job: TaskSubmission, model: str = "m-up") -> str:
    await p.start()
    try:
        return (await p.submit_task(job, target(p, model))).upstream_id
    finally:
        await p.aclose()


async def poll(p: Provider, refs: list[TaskRef]) -> dict[str, Any]:
    await p.start()
    try:
        return await p.poll_tasks(refs, TIMEOUTS)
    finally:
        await p.aclose()


def assert_no_secret(exc: BaseException) -> None:
    message = str(exc) + " " + str(getattr(exc, "message", ""))
    for secret in SECRETS:
        assert secret not in message


def video_job(action: str = "text2video", **fields: Any) -> TaskSubmission:
    return TaskSubmission("video", action, "client-model", fields)


# -- Kling: the token --


def _b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify_hs256(token: str, secret: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, signature = token.split(".")
    expected = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert hmac.compare_digest(expected, _b64decode(signature)), "bad HS256 signature"
    assert "=" not in token, "JWT parts are unpadded base64url"
    return json.loads(_b64decode(header)), json.loads(_b64decode(payload))


def test_kling_jwt_is_hs256_with_iss_exp_nbf() -> None:
    now = 1_700_000_000.4
    header, claims = verify_hs256(mint_jwt(KlingKeys(ACCESS, SECRET), now), SECRET)
    assert header == {"alg": "HS256", "typ": "JWT"}
    assert claims == {"iss": ACCESS, "exp": 1_700_000_000 + 1800, "nbf": 1_700_000_000 - 5}
    with pytest.raises(AssertionError):
        verify_hs256(mint_jwt(KlingKeys(ACCESS, SECRET), now), "another secret")


def test_kling_key_formats() -> None:
    assert KlingKeys.parse(f"{ACCESS}:{SECRET}") == KlingKeys(ACCESS, SECRET)
    assert KlingKeys.parse(f"{ACCESS}|{SECRET}") == KlingKeys(ACCESS, SECRET)
    assert KlingKeys.parse(" ak | sk ") == KlingKeys("ak", "sk")
    assert KlingKeys.parse("sk-plain-relay-key") is None
    assert KlingKeys.parse("ak:") is None


def test_kling_sends_a_fresh_valid_token_on_every_request(tmp_path: Path) -> None:
    async def main() -> None:
        async with Upstream(lambda s: (200, {"code": 0, "data": {"task_id": "k-1"}})) as up:
            p = provider(KlingProvider, "kling", up.url, f"{ACCESS}|{SECRET}", tmp_path)
            assert await submit(p, video_job(prompt="a kite")) == "k-1"
            auth = up.seen[0].headers["Authorization"]
            assert auth.startswith("Bearer ")
            _, claims = verify_hs256(auth.removeprefix("Bearer "), SECRET)
            assert claims["iss"] == ACCESS
            assert claims["nbf"] <= time.time() < claims["exp"]
            assert claims["exp"] - time.time() > 1700

    run(main())


# -- Kling: bodies --


def test_kling_body_from_canonical_fields() -> None:
    job = video_job(
        prompt="a kite",
        negative_prompt="rain",
        seconds=8.0,
        width=1280,
        height=720,
        cfg_scale=0.5,
        mode="pro",
        external_task_id="mine-1",
        metadata={"camera_control": {"type": "simple"}, "callback_url": "http://x"},
    )
    body = request_body(job, "kling-v2-master")
    assert body == {
        "model_name": "kling-v2-master",
        "prompt": "a kite",
        "negative_prompt": "rain",
        "cfg_scale": 0.5,
        "mode": "pro",
        "external_task_id": "mine-1",
        "aspect_ratio": "16:9",
        "duration": "10",
        "camera_control": {"type": "simple"},
    }
    assert request_body(video_job(prompt="p", seconds=4.0), "m")["duration"] == "5"
    assert request_body(video_job(prompt="p", seconds=12.0), "m")["duration"] == "10"
    assert "duration" not in request_body(video_job(prompt="p"), "m")


def test_kling_images_go_as_urls_or_raw_base64() -> None:
    raw = base64.b64encode(PNG).decode()
    job = video_job(
        "image2video", prompt="", image=f"data:image/png;base64,{raw}", image_tail="https://e/x.png"
    )
    body = request_body(job, "kling-v1")
    assert body["image"] == raw and body["image_tail"] == "https://e/x.png"
    assert "aspect_ratio" not in body  # image2video takes the image's shape
    upload = TaskSubmission(
        "openai-video", "image2video", "m", {"prompt": "p"}, files={"image": InputFile(PNG)}
    )
    assert request_body(upload, "kling-v1")["image"] == raw


def test_aspect_ratio_is_the_nearest_of_the_three() -> None:
    assert aspect_ratio({"width": 720, "height": 1280}) == "9:16"
    assert aspect_ratio({"width": 1024, "height": 1024}) == "1:1"
    assert aspect_ratio({"width": 1100, "height": 1000}) == "1:1"
    assert aspect_ratio({"aspect_ratio": "21:9"}) == "16:9"
    assert aspect_ratio({"aspect_ratio": "9:16", "width": 1280, "height": 720}) == "9:16"
    assert aspect_ratio({}) is None


def test_kling_native_body_passes_through_with_model_mapped() -> None:
    native = {
        "model_name": "client-name",
        "prompt": "a kite",
        "duration": 10,
        "sound": "on",
        "callback_url": "http://client.example/hook",
        "camera_control": {"type": "down_back"},
    }
    job = video_job(prompt="ignored", native_format="kling", native=native, seconds=10.0)
    body = request_body(job, "kling-v2-6")
    assert body == {
        "model_name": "kling-v2-6",
        "prompt": "a kite",
        "duration": "10",
        "sound": "on",
        "camera_control": {"type": "down_back"},
    }
    assert native["model_name"] == "client-name"  # the job's own fields are left alone


def test_kling_remix_is_unsupported(tmp_path: Path) -> None:
    p = provider(KlingProvider, "kling", "http://127.0.0.1:9", KLING_KEY, tmp_path)
    with pytest.raises(InvalidRequest) as info:
        run(submit(p, video_job("remix", prompt="p", remix_of="x")))
    assert info.value.code == "unsupported_operation"


# -- Kling: states and errors --


def test_kling_state_mapping() -> None:
    assert kling_state("t", {"task_status": "submitted"}).status == "QUEUED"
    assert kling_state("t", {"task_status": "processing"}).status == "IN_PROGRESS"
    assert kling_state("t", {"task_status": "paused-by-vendor"}).status == "UNKNOWN"
    assert kling_state("t", {}).status == "UNKNOWN"
    failed = kling_state("t", {"task_status": "failed", "task_status_msg": "Risk control"})
    assert (failed.status, failed.fail_reason, failed.error_type) == (
        "FAILURE",
        "Risk control",
        "generation_failed",
    )
    done = kling_state(
        "t",
        {
            "task_status": "succeed",
            "created_at": 1_722_769_557_708,
            "task_result": {
                "videos": [{"id": "v1", "url": "https://cdn.kling/v1.mp4", "duration": "5.1"}, "junk"]
            },
        },
    )
    assert done.status == "SUCCESS" and done.progress == 100
    assert done.outputs == [
        {"url": "https://cdn.kling/v1.mp4", "content_type": "video/mp4", "id": "v1", "duration": 5.1}
    ]


KLING_ERRORS = [
    # (HTTP status, body, expected class, expected client status)
    (429, {"code": 1302, "message": "rate"}, RouteFailed, 429),
    (429, {"code": 1303, "message": "concurrency"}, RouteFailed, 429),
    (429, {"code": 1102, "message": "balance"}, RouteFailed, 429),
    (401, {"code": 1002, "message": "bad token"}, RouteFailed, 502),
    (403, {"code": 1103, "message": "no access"}, RouteFailed, 502),
    (500, {"code": 5000, "message": "oops"}, RouteFailed, 502),
    (503, {"code": 5001, "message": "busy"}, RouteFailed, 502),
    (400, {"code": 1201, "message": "prompt too long"}, UpstreamRejected, 400),
    (404, {"code": 1203, "message": "model not found"}, UpstreamRejected, 404),
    (400, {"code": 1301, "message": "content policy"}, UpstreamRejected, 400),
    (200, {"code": 1201, "message": "bad param under 200"}, UpstreamRejected, 400),
    (429, b"<html>slow down</html>", RouteFailed, 429),
    (502, b"", RouteFailed, 502),
    (400, b"not json", RouteFailed, 502),  # a page, not Kling's API: the base_url is wrong
    (200, b"not json", RouteFailed, 502),
    (200, {"code": 0, "data": {}}, RouteFailed, 502),  # no task id
]


@pytest.mark.parametrize(("status", "body", "kind", "client_status"), KLING_ERRORS)
def test_kling_errors(
    tmp_path: Path, status: int, body: Any, kind: type[Exception], client_status: int
) -> None:
    async def main() -> None:
        async with Upstream(lambda s: (status, body)) as up:
            p = provider(KlingProvider, "kling", up.url, KLING_KEY, tmp_path)
            with pytest.raises(kind) as info:
                await submit(p, video_job(prompt="p"))
            assert info.value.status == client_status  # type: ignore[attr-defined]
            assert_no_secret(info.value)
            if kind is UpstreamRejected and isinstance(body, dict):
                assert info.value.message == body["message"]  # type: ignore[attr-defined]

    run(main())


def test_vendor_messages_never_echo_secrets(tmp_path: Path) -> None:
    leak = {"code": 1200, "message": f"bad key {SECRET} / {ACCESS} in header {KLING_KEY}"}

    async def main() -> None:
        async with Upstream(lambda s: (400, leak)) as up:
            p = provider(KlingProvider, "kling", up.url, KLING_KEY, tmp_path)
            with pytest.raises(UpstreamRejected) as info:
                await submit(p, video_job(prompt="p"))
            assert_no_secret(info.value)
            assert "[redacted]" in info.value.message

    run(main())
    assert scrub("x" * 2000, []).endswith("...") and len(scrub("x" * 2000, [])) == 500


def test_connection_refused_is_route_failed(tmp_path: Path) -> None:
    p = provider(KlingProvider, "kling", "http://127.0.0.1:9", KLING_KEY, tmp_path)
    with pytest.raises(RouteFailed) as info:
        run(submit(p, video_job(prompt="p")))
    assert_no_secret(info.value)


def test_kling_poll_queries_each_job_by_action(tmp_path: Path) -> None:
    def respond(seen: Seen) -> Answer:
        task_id = seen.path.rsplit("/", 1)[1]
        if task_id == "gone":
            return 404, {"code": 1203, "message": "task not found"}
        if task_id == "broken":
            return 500, b"oops"
        if task_id == "garbled":
            return 200, b"{not json"
        status = {"a": "submitted", "b": "succeed"}[task_id]
        videos = [{"id": "v", "url": f"https://cdn/{task_id}.mp4", "duration": "10"}]
        return 200, {
            "code": 0,
            "data": {"task_id": task_id, "task_status": status, "task_result": {"videos": videos}},
        }

    async def main() -> None:
        async with Upstream(respond) as up:
            p = provider(KlingProvider, "kling", up.url, KLING_KEY, tmp_path)
            refs = [
                TaskRef(i, "image2video" if i == "b" else "text2video")
                for i in ("a", "b", "gone", "broken", "garbled")
            ]
            refs.append(TaskRef("c", "remix"))  # not a Kling query: left out, nothing sent
            states = await poll(p, refs)
            assert set(states) == {"a", "b"}
            assert states["a"].status == "QUEUED"
            assert states["b"].outputs[0]["duration"] == 10.0
            paths = sorted(s.path for s in up.seen)
            assert "/v1/videos/image2video/b" in paths and "/v1/videos/text2video/a" in paths
            assert len(paths) == 5
            for seen in up.seen:
                verify_hs256(seen.headers["Authorization"].removeprefix("Bearer "), SECRET)

    run(main())


def test_poll_each_bounds_concurrency_and_survives_bugs(caplog: pytest.LogCaptureFixture) -> None:
    active = 0
    peak = 0

    async def query(ref: TaskRef) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        if ref.upstream_id == "7":
            raise KeyError("boom")
        if ref.upstream_id == "8":
            raise RouteFailed("The upstream answered HTTP 500.")
        return kling_state(ref.upstream_id, {"task_status": "processing"})

    refs = [TaskRef(str(i), "text2video") for i in range(30)]
    with caplog.at_level(logging.WARNING, logger="unigate.providers"):
        states = run(poll_each(refs, query, "Test"))
    assert peak == 8
    assert len(states) == 28 and "7" not in states and "8" not in states
    assert any("task 7" in r.getMessage() and "KeyError" in r.getMessage() for r in caplog.records)


# -- Vidu --


def test_vidu_bodies() -> None:
    path, body = vidu_request(
        TaskSubmission(
            "vidu",
            "text2audio",
            "audio1.0",
            {
                "model": "audio1.0",
                "prompt": "rain",
                "duration": 5.0,
                "seed": 7,
                "payload": "p",
                "callback_url": "http://x",
            },
        ),
        "audio-up",
    )
    assert path == "/ent/v2/text2audio"
    assert body == {"model": "audio-up", "prompt": "rain", "duration": 5.0, "seed": 7, "payload": "p"}
    path, body = vidu_request(
        TaskSubmission(
            "vidu",
            "lip-sync",
            "ls",
            {
                "video_url": "https://v/a.mp4",
                "text": "hello there",
                "voice_id": "v1",
                "speed": 1.0,
                "volume": 0.0,
                "model": "x",
            },
        ),
        "lip-up",
    )
    assert path == "/ent/v2/lip-sync"
    assert "model" not in body and body["video_url"] == "https://v/a.mp4" and body["voice_id"] == "v1"
    path, body = vidu_request(
        video_job(prompt="a kite", seconds=4.4, seed=3, width=1280, height=720, metadata={"bgm": True}),
        "viduq1",
    )
    assert path == "/ent/v2/text2video"
    assert body == {
        "model": "viduq1",
        "prompt": "a kite",
        "duration": 4,
        "seed": 3,
        "resolution": "720p",
        "aspect_ratio": "16:9",
        "bgm": True,
    }
    raw = base64.b64encode(PNG).decode()
    path, body = vidu_request(video_job("image2video", prompt="", image=raw), "vidu2.0")
    assert path == "/ent/v2/img2video" and body["images"] == [f"data:image/png;base64,{raw}"]
    assert "aspect_ratio" not in body and "prompt" not in body
    upload = TaskSubmission(
        "openai-video",
        "image2video",
        "m",
        {"prompt": "p"},
        files={"image": InputFile(PNG, "a.png", "image/png")},
    )
    assert vidu_request(upload, "vidu2.0")[1]["images"] == [f"data:image/png;base64,{raw}"]
    path, body = vidu_request(
        video_job("image2video", image="https://i/a.png", image_tail="https://i/b.png"), "q1"
    )
    assert path == "/ent/v2/start-end2video" and body["images"] == ["https://i/a.png", "https://i/b.png"]


def test_vidu_state_mapping() -> None:
    for state, status in (
        ("created", "QUEUED"),
        ("queueing", "QUEUED"),
        ("processing", "IN_PROGRESS"),
        ("scheduling", "UNKNOWN"),
        ("", "UNKNOWN"),
    ):
        assert vidu_state("t", "text2audio", {"state": state}).status == status
    failed = vidu_state("t", "lip-sync", {"state": "failed", "err_code": "CreationPolicyViolation"})
    assert (failed.status, failed.fail_reason, failed.error_type) == (
        "FAILURE",
        "CreationPolicyViolation",
        "CreationPolicyViolation",
    )
    assert vidu_state("t", "text2audio", {"state": "failed"}).fail_reason == "The Vidu task failed."
    done = vidu_state(
        "t",
        "text2video",
        {
            "state": "success",
            "creations": [
                {"id": "c1", "url": "https://cdn/v.mp4?sig=1", "cover_url": "https://cdn/c.jpg"},
                {"id": "no-url"},
            ],
        },
    )
    assert done.status == "SUCCESS"
    assert done.outputs == [
        {
            "url": "https://cdn/v.mp4?sig=1",
            "cover_url": "https://cdn/c.jpg",
            "id": "c1",
            "thumbnail_url": "https://cdn/c.jpg",
            "content_type": "video/mp4",
        }
    ]
    audio = vidu_state(
        "t", "text2audio", {"state": "success", "creations": [{"id": "a", "url": "https://cdn/a.mp3"}]}
    )
    assert audio.outputs[0]["content_type"] == "audio/mpeg"


VIDU_ERRORS = [
    (429, {"code": 429, "reason": "TooManyRequests", "message": "too many requests"}, RouteFailed, 429),
    (400, {"code": 400, "reason": "CreditInsufficient", "message": "insufficient credits"}, RouteFailed, 429),
    (401, {"code": 401, "reason": "Unauthorized", "message": "unauthorized"}, RouteFailed, 502),
    (500, {"code": 500, "reason": "InternalServiceFailure", "message": "x"}, RouteFailed, 502),
    (
        400,
        {"code": 400, "reason": "FieldInvalid", "message": "invalid field: duration"},
        UpstreamRejected,
        400,
    ),
    (
        400,
        {"code": 400, "reason": "AuditSubmitIllegal", "message": "submit is illegal"},
        UpstreamRejected,
        400,
    ),
    (200, {"state": "created"}, RouteFailed, 502),  # no task id
]


@pytest.mark.parametrize(("status", "body", "kind", "client_status"), VIDU_ERRORS)
def test_vidu_errors(
    tmp_path: Path, status: int, body: Any, kind: type[Exception], client_status: int
) -> None:
    async def main() -> None:
        async with Upstream(lambda s: (status, body)) as up:
            p = provider(ViduProvider, "vidu", up.url, VIDU_KEY, tmp_path)
            with pytest.raises(kind) as info:
                await submit(p, TaskSubmission("vidu", "text2audio", "a", {"prompt": "rain"}))
            assert info.value.status == client_status  # type: ignore[attr-defined]
            assert_no_secret(info.value)
            if kind is UpstreamRejected:
                assert info.value.message == body["message"]  # type: ignore[attr-defined]
                assert info.value.code == body["reason"]  # type: ignore[attr-defined]

    run(main())


def test_vidu_submit_and_poll(tmp_path: Path) -> None:
    def respond(seen: Seen) -> Answer:
        if seen.method == "POST":
            return 200, {"task_id": "8810", "state": "created", "model": seen.json()["model"]}
        return 200, {
            "id": "8810",
            "state": "success",
            "err_code": "",
            "creations": [{"id": "c", "url": "https://cdn/out.wav", "cover_url": ""}],
        }

    async def main() -> None:
        async with Upstream(respond) as up:
            p = provider(ViduProvider, "vidu", up.url, VIDU_KEY, tmp_path)
            job = TaskSubmission(
                "vidu", "text2audio", "a", {"model": "a", "prompt": "rain", "callback_url": "http://x"}
            )
            assert await submit(p, job, "audio1.0") == "8810"
            sent = up.seen[0]
            assert sent.path == "/ent/v2/text2audio" and sent.headers["Authorization"] == f"Token {VIDU_KEY}"
            assert sent.json() == {"model": "audio1.0", "prompt": "rain"}
            states = await poll(p, [TaskRef("8810", "text2audio"), TaskRef("missing", "text2audio")])
            assert up.seen[1].path == "/ent/v2/tasks/8810/creations"
            output = states["8810"].outputs[0]
            assert (output["url"], output["id"]) == ("https://cdn/out.wav", "c")
            assert output["content_type"].startswith("audio/")

    run(main())


# -- PicWish --


def test_picwish_state_mapping() -> None:
    for state, status in (
        (0, "QUEUED"),
        (2, "QUEUED"),
        (3, "QUEUED"),
        (4, "IN_PROGRESS"),
        ("4", "IN_PROGRESS"),
        (5, "UNKNOWN"),
        (None, "UNKNOWN"),
        ("x", "UNKNOWN"),
    ):
        assert picwish_state("t", {"state": state}).status == status
    assert picwish_state("t", {"state": 4, "progress": 42}).progress == 42
    for state, error_type in (
        (-1, "processing_failed"),
        (-2, "result_upload_failed"),
        (-3, "source_download_failed"),
        (-5, "file_too_large"),
        (-7, "invalid_image"),
        (-8, "processing_timeout"),
        (-9, "processing_failed"),
    ):
        failed = picwish_state("t", {"state": state})
        assert failed.status == "FAILURE" and failed.error_type == error_type and failed.fail_reason
    assert (
        "Image decode error"
        in picwish_state("t", {"state": -7, "state_detail": "Image decode error"}).fail_reason
    )
    done = picwish_state(
        "t",
        {
            "state": 1,
            "image": "https://cdn/cut.png",
            "mask": "https://cdn/mask.png",
            "class_masks": {"hair": "https://cdn/hair.png"},
            "state_detail": "Complete",
        },
    )
    assert done.status == "SUCCESS" and done.progress == 100
    assert done.outputs == [
        {
            "url": "https://cdn/cut.png",
            "mask_url": "https://cdn/mask.png",
            "content_type": "image/png",
            "extra": {"class_masks": {"hair": "https://cdn/hair.png"}},
        }
    ]
    doc = picwish_state("t", {"state": 1, "file": "https://cdn/out.docx"})
    assert doc.outputs[0]["url"] == "https://cdn/out.docx"
    masks_only = picwish_state("t", {"state": 1, "class_masks": {"hair": "https://cdn/hair.png"}})
    assert masks_only.outputs[0]["url"] == "https://cdn/hair.png"


def test_picwish_form_fields() -> None:
    fields = form_fields(
        {
            "image_url": "https://i/a.png",
            "type": "person",
            "crop": True,
            "scale_factor": 2,
            "rectangles": [{"x": 1}],
            "sync": 1,
            "return_type": 2,
            "callback_url": "http://x",
            "bg_color": None,
        }
    )
    assert fields == {
        "image_url": "https://i/a.png",
        "type": "person",
        "crop": "1",
        "scale_factor": "2",
        "rectangles": '[{"x":1}]',
        "sync": "0",
        "return_type": "1",
    }


def test_picwish_submit_multipart_and_poll(tmp_path: Path) -> None:
    polls = 0

    def respond(seen: Seen) -> Answer:
        nonlocal polls
        if seen.method == "POST":
            return 200, {"status": 200, "message": "success", "data": {"task_id": "pw-1"}}
        polls += 1
        data = (
            {"task_id": "pw-1", "state": 4, "progress": 50}
            if polls == 1
            else {"task_id": "pw-1", "state": 1, "progress": 100, "image": "https://cdn/out.png"}
        )
        return 200, {"status": 200, "data": data}

    async def main() -> None:
        async with Upstream(respond) as up:
            p = provider(PicWishProvider, "picwish", up.url, PICWISH_KEY, tmp_path)
            files = {
                "image_file": InputFile(PNG, "in.png", "image/png"),
                "mask_file": InputFile(PNG, "m.png", "image/png"),
            }
            job = TaskSubmission(
                "picwish", "visual/inpaint", "picwish/inpaint", {"callback_url": "http://x"}, files=files
            )
            assert await submit(p, job) == "pw-1"
            sent = up.seen[0]
            assert sent.path == "/api/tasks/visual/inpaint" and sent.headers["X-API-KEY"] == PICWISH_KEY
            assert sent.form == {"sync": "0", "return_type": "1"}
            assert sent.files["image_file"] == ("in.png", "image/png", PNG)
            assert sent.files["mask_file"][2] == PNG
            ref = TaskRef("pw-1", "visual/inpaint")
            first = (await poll(p, [ref]))["pw-1"]
            assert (first.status, first.progress) == ("IN_PROGRESS", 50)
            second = (await poll(p, [ref]))["pw-1"]
            assert second.status == "SUCCESS" and second.outputs[0]["url"] == "https://cdn/out.png"
            assert up.seen[1].path == "/api/tasks/visual/inpaint/pw-1"

    run(main())


PICWISH_ERRORS = [
    (200, {"status": 401, "message": "invalid key"}, RouteFailed, 502),
    (200, {"status": 429, "message": "slow"}, RouteFailed, 429),
    (200, {"status": 500, "message": "oops"}, RouteFailed, 502),
    (200, {"status": 400, "message": "image_url or image_file is required"}, UpstreamRejected, 400),
    (200, {"status": 413, "message": "too large"}, UpstreamRejected, 413),
    (400, {"status": 400, "message": "bad"}, UpstreamRejected, 400),
    (429, {"status": 429, "message": "slow"}, RouteFailed, 429),
    (403, {"status": 403, "message": "forbidden"}, RouteFailed, 502),
    (200, {"message": "no status"}, RouteFailed, 502),
    (200, {"status": 200, "data": {}}, RouteFailed, 502),  # no task id
]


@pytest.mark.parametrize(("status", "body", "kind", "client_status"), PICWISH_ERRORS)
def test_picwish_errors(
    tmp_path: Path, status: int, body: Any, kind: type[Exception], client_status: int
) -> None:
    async def main() -> None:
        async with Upstream(lambda s: (status, body)) as up:
            p = provider(PicWishProvider, "picwish", up.url, PICWISH_KEY, tmp_path)
            with pytest.raises(kind) as info:
                await submit(
                    p, TaskSubmission("picwish", "document/ocr", "m", {"image_url": "https://i/a.png"})
                )
            assert info.value.status == client_status  # type: ignore[attr-defined]
            assert_no_secret(info.value)
            if kind is UpstreamRejected:
                assert info.value.message == body["message"]  # type: ignore[attr-defined]

    run(main())


def test_picwish_refuses_odd_actions(tmp_path: Path) -> None:
    p = provider(PicWishProvider, "picwish", "http://127.0.0.1:9", PICWISH_KEY, tmp_path)
    for action in ("visual/../admin", "text2video", "visual", "visual/a?b=1"):
        with pytest.raises(InvalidRequest):
            run(submit(p, TaskSubmission("picwish", action, "m", {})))


def test_picwish_poll_body_errors_leave_the_job_out(tmp_path: Path) -> None:
    def respond(seen: Seen) -> Answer:
        if seen.path.endswith("/ok"):
            return 200, {"status": 200, "data": {"task_id": "ok", "state": 0}}
        return 200, {"status": 404, "message": "task not found"}

    async def main() -> None:
        async with Upstream(respond) as up:
            p = provider(PicWishProvider, "picwish", up.url, PICWISH_KEY, tmp_path)
            states = await poll(
                p, [TaskRef("ok", "visual/segmentation"), TaskRef("nope", "visual/segmentation")]
            )
            assert set(states) == {"ok"} and states["ok"].status == "QUEUED"

    run(main())


def test_default_base_urls_and_registry(tmp_path: Path) -> None:
    for cls, protocol, host in (
        (KlingProvider, "kling", "api-singapore.klingai.com"),
        (ViduProvider, "vidu", "api.vidu.com"),
        (PicWishProvider, "picwish", "techhk.aoscdn.com"),
    ):
        assert protocol_class(protocol) is cls
        p = provider(cls, protocol, "", "k:s", tmp_path)
        assert p.http._pool.origin.host == host  # type: ignore[attr-defined]


def test_every_registered_protocol_names_its_own_adapter() -> None:
    """The registry names each adapter by module and class (imported when a provider of it is
    built): each entry resolves to a Provider declaring that protocol."""
    for protocol in PROTOCOLS:
        cls = protocol_class(protocol)
        assert issubclass(cls, Provider) and cls.protocol == protocol


# -- against the fake vendor servers (tests/support/fake_*.py) --


async def poll_until_done(p: Provider, ref: TaskRef, limit: int = 20) -> list[Any]:
    """Every state one job showed, polled until it ended (or `limit` polls)."""
    seen: list[Any] = []
    await p.start()
    try:
        for _ in range(limit):
            state = (await p.poll_tasks([ref], TIMEOUTS)).get(ref.upstream_id)
            if state is not None:
                seen.append(state)
                if state.status in ("SUCCESS", "FAILURE"):
                    break
    finally:
        await p.aclose()
    return seen


async def fetch(url: str) -> tuple[int, str, bytes]:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, resp.content_type, await resp.read()


def test_kling_against_the_fake(tmp_path: Path) -> None:
    from tests.support.fake_kling import FakeKling

    with FakeKling() as fake:

        async def main() -> None:
            p = provider(KlingProvider, "kling", fake.base_url, fake.gateway_key, tmp_path)
            job = video_job(prompt="a kite over the sea", seconds=10.0, width=1280, height=720, mode="pro")
            task_id = await submit(p, job, "kling-v2-master")
            sent = fake.submits()[0].json
            assert sent["model_name"] == "kling-v2-master" and sent["duration"] == "10"
            assert sent["aspect_ratio"] == "16:9" and "callback_url" not in sent
            states = await poll_until_done(p, TaskRef(task_id, "text2video"))
            assert [s.status for s in states] == ["QUEUED", "IN_PROGRESS", "SUCCESS"]
            output = states[-1].outputs[0]
            assert output["url"].startswith(fake.root + "/files/") and output["duration"] == 10.0
            status, content_type, data = await fetch(output["url"])
            assert (status, content_type) == (200, "video/mp4") and data[4:8] == b"ftyp"

            fake.reset(script="fail")
            failed_id = await submit(p, video_job("image2video", image=f"data:image/png;base64,{_png_b64()}"))
            assert fake.submits()[-1].json["image"] == _png_b64()  # the data: prefix is gone
            states = await poll_until_done(p, TaskRef(failed_id, "image2video"))
            assert states[-1].status == "FAILURE" and states[-1].fail_reason

            fake.reset(script="unknown")
            odd_id = await submit(p, video_job(prompt="p"))
            states = await poll_until_done(p, TaskRef(odd_id, "text2video"))
            assert "UNKNOWN" in [s.status for s in states] and states[-1].status == "SUCCESS"

            fake.reset(submit_reject=True, reject_code=1301)
            with pytest.raises(UpstreamRejected) as rejected_info:
                await submit(p, video_job(prompt="p"))
            assert rejected_info.value.status == 400
            fake.reset(submit_status=429)
            with pytest.raises(RouteFailed) as failed_info:
                await submit(p, video_job(prompt="p"))
            assert failed_info.value.status == 429

            wrong = provider(
                KlingProvider, "kling", fake.base_url, f"{fake.access_key}:not-the-secret", tmp_path
            )
            fake.reset()
            with pytest.raises(RouteFailed) as auth_info:
                await submit(wrong, video_job(prompt="p"))
            assert "not-the-secret" not in auth_info.value.message

        run(main())


def _png_b64() -> str:
    from tests.support import task_fixtures

    return base64.b64encode(task_fixtures.png()).decode()


def test_vidu_against_the_fake(tmp_path: Path) -> None:
    from tests.support.fake_vidu import FakeVidu

    with FakeVidu() as fake:

        async def main() -> None:
            p = provider(ViduProvider, "vidu", fake.root, fake.api_key, tmp_path)
            audio = TaskSubmission(
                "vidu", "text2audio", "audio1.0", {"model": "audio1.0", "prompt": "rain", "duration": 4.0}
            )
            audio_id = await submit(p, audio, "audio1.0")
            states = await poll_until_done(p, TaskRef(audio_id, "text2audio"))
            assert [s.status for s in states] == ["QUEUED", "IN_PROGRESS", "SUCCESS"]
            status, content_type, _ = await fetch(states[-1].outputs[0]["url"])
            assert (status, content_type) == (200, "audio/mpeg")

            lip = TaskSubmission(
                "vidu",
                "lip-sync",
                "ls",
                {"video_url": "https://v.example/a.mp4", "audio_url": "https://v.example/a.mp3"},
            )
            lip_id = await submit(p, lip, "lipsync-up")
            assert "model" not in fake.submits()[-1].json
            done = (await poll_until_done(p, TaskRef(lip_id, "lip-sync")))[-1]
            assert done.status == "SUCCESS" and done.outputs[0]["cover_url"].startswith(fake.root)

            image = TaskSubmission(
                "openai-video",
                "image2video",
                "m",
                {"prompt": "p", "seconds": 4.0},
                files={"image": InputFile(base64.b64decode(_png_b64()), "a.png", "image/png")},
            )
            video_id = await submit(p, image, "viduq1")
            assert fake.submits()[-1].path == "/ent/v2/img2video"
            assert fake.submits()[-1].json["images"][0].startswith("data:image/png;base64,")
            assert (await poll_until_done(p, TaskRef(video_id, "image2video")))[-1].status == "SUCCESS"

            fake.reset(script="fail", fail_reason="AuditSubmitIllegal")
            failed_id = await submit(p, audio, "audio1.0")
            failed = (await poll_until_done(p, TaskRef(failed_id, "text2audio")))[-1]
            assert (failed.status, failed.fail_reason) == ("FAILURE", "AuditSubmitIllegal")

            fake.reset(submit_reject=True, reject_reason="CreditInsufficient")
            with pytest.raises(RouteFailed):
                await submit(p, audio, "audio1.0")
            fake.reset(submit_reject=True)
            with pytest.raises(UpstreamRejected):
                await submit(p, audio, "audio1.0")
            wrong = provider(ViduProvider, "vidu", fake.root, "not-the-key", tmp_path)
            fake.reset()
            with pytest.raises(RouteFailed) as info:
                await submit(wrong, audio, "audio1.0")
            assert "not-the-key" not in info.value.message

        run(main())


def test_picwish_against_the_fake(tmp_path: Path) -> None:
    from tests.support import task_fixtures
    from tests.support.fake_picwish import FakePicWish

    with FakePicWish() as fake:

        async def main() -> None:
            p = provider(PicWishProvider, "picwish", fake.root, fake.api_key, tmp_path)
            files = {"image_file": InputFile(task_fixtures.png(), "in.png", "image/png")}
            job = TaskSubmission(
                "picwish", "visual/segmentation", "m", {"output_type": "1", "sync": "1"}, files=files
            )
            task_id = await submit(p, job)
            sent = fake.submits()[0]
            assert sent.params()["sync"] == "0" and sent.files["image_file"][0].size == len(
                task_fixtures.png()
            )
            states = await poll_until_done(p, TaskRef(task_id, "visual/segmentation"))
            assert [s.status for s in states] == ["QUEUED", "IN_PROGRESS", "SUCCESS"]
            assert states[1].progress == 50
            output = states[-1].outputs[0]
            assert output["url"].startswith(fake.root) and output["mask_url"].startswith(fake.root)
            status, content_type, _ = await fetch(output["url"])
            assert (status, content_type) == (200, "image/png")

            ocr = TaskSubmission(
                "picwish", "document/ocr", "m", {"image_url": "https://i.example/a.png", "format": "txt"}
            )
            ocr_id = await submit(p, ocr)
            done = (await poll_until_done(p, TaskRef(ocr_id, "document/ocr")))[-1]
            assert done.status == "SUCCESS" and done.outputs[0]["url"].endswith(".txt")

            fake.reset(script="fail", fail_state=-8)
            failed_id = await submit(p, ocr)
            failed = (await poll_until_done(p, TaskRef(failed_id, "document/ocr")))[-1]
            assert (failed.status, failed.error_type) == ("FAILURE", "processing_timeout")

            fake.reset(script="unknown")
            odd_id = await submit(p, ocr)
            states = await poll_until_done(p, TaskRef(odd_id, "document/ocr"))
            assert "UNKNOWN" in [s.status for s in states] and states[-1].status == "SUCCESS"

            fake.reset(submit_reject=True)
            with pytest.raises(UpstreamRejected):
                await submit(p, ocr)
            fake.reset(submit_status=503)
            with pytest.raises(RouteFailed):
                await submit(p, ocr)
            fake.reset()
            wrong = provider(PicWishProvider, "picwish", fake.root, "not-the-key", tmp_path)
            with pytest.raises(RouteFailed) as info:
                await submit(wrong, ocr)
            assert "not-the-key" not in info.value.message

        run(main())
