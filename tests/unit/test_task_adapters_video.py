"""The video task adapters of the `openai` (`/videos`) and `gemini` (Veo's predictLongRunning)
protocols against scripted loopback servers: request building (OpenAI's multipart create with
its `input_reference` forms, Veo's instances/parameters, native pass-through), state mappings
(unknown states included), error classes, per-job polling that survives one bad job, binary
relays, and Veo downloads that follow redirects without sending the key to another origin."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
from aiohttp import web

from tests.support.fake_openai_videos import FAIL_CODE as FAKE_VIDEOS_FAIL_CODE
from tests.support.fake_openai_videos import FakeOpenAIVideos
from tests.support.fake_veo import FakeVeo
from tests.support.video import decode_video
from unigate.config import ProviderConfig
from unigate.errors import InvalidRequest, NotFound, UpstreamRejected
from unigate.providers.base import (
    InputFile,
    Provider,
    ProviderContext,
    Reply,
    RouteFailed,
    Target,
    TaskRef,
    TaskSubmission,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.download import DownloadPools
from unigate.providers.google.gemini import GeminiProvider
from unigate.providers.google.veo import operation_state
from unigate.providers.google.veo import request_body as veo_body
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.providers.openai.videos import create_parts, video_state
from unigate.providers.registry import protocol_class

T = TypeVar("T")
OPENAI_KEY = "sk-test-openai-very-secret-0123"
GOOGLE_KEY = "AIza-test-google-very-secret-4567"
TIMEOUTS = Timeouts(connect=2.0, read=5.0, total=10.0)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 1000
OP = "models/veo-3.0-generate-001/operations/op123"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# -- a scripted upstream in the test's own event loop --


@dataclass
class Seen:
    method: str
    path: str  # path and query
    headers: dict[str, str]
    body: bytes = b""
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)

    def json(self) -> Any:
        return orjson.loads(self.body)


Respond = Callable[[Seen], web.StreamResponse | Awaitable[web.StreamResponse]]


class Upstream:
    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

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
            seen = Seen(request.method, request.path_qs, dict(request.headers))
            if request.content_type == "multipart/form-data":
                for name, value in (await request.post()).items():
                    if isinstance(value, web.FileField):
                        seen.files[name] = (value.filename, value.content_type, value.file.read())
                    else:
                        seen.form[name] = str(value)
            else:
                seen.body = await request.read()
            self.seen.append(seen)
            answer = self.respond(seen)
            return await answer if asyncio.iscoroutine(answer) else answer  # type: ignore[return-value]
        finally:
            self.in_flight -= 1


def j(status: int, body: Any) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def openai_provider(url: str, tmp_path: Path) -> Provider:
    config = ProviderConfig(name="oa", protocol="openai", base_url=f"{url}/v1", api_key=OPENAI_KEY)
    return protocol_class("openai")(config, ProviderContext(data_dir=tmp_path))


def gemini_provider(url: str, tmp_path: Path) -> Provider:
    config = ProviderConfig(name="gm", protocol="gemini", base_url=url, api_key=GOOGLE_KEY)
    return protocol_class("gemini")(config, ProviderContext(data_dir=tmp_path))


def target(provider: Provider, model: str) -> Target:
    return Target(provider, model, TIMEOUTS, "route")


def job(action: str, files: dict[str, InputFile] | None = None, **fields: Any) -> TaskSubmission:
    return TaskSubmission("video", action, "client-model", fields, files=files or {})


async def body_of(reply: Reply) -> bytes:
    assert reply.stream is not None
    return b"".join([chunk async for chunk in reply.stream])


def no_secret(text: str) -> None:
    assert OPENAI_KEY not in text and GOOGLE_KEY not in text


# -- OpenAI: creating jobs --


def test_registry_uses_the_video_capable_adapters() -> None:
    assert protocol_class("openai") is OpenAIProvider and protocol_class("gemini") is GeminiProvider
    assert {"text2video", "image2video", "remix"} <= OpenAIProvider.capabilities
    assert {"chat", "text2video", "image2video"} <= GeminiProvider.capabilities


def test_openai_create_sends_canonical_fields_as_multipart(tmp_path: Path) -> None:
    async def main() -> None:
        async with Upstream(lambda s: j(200, {"id": "video_abc", "status": "queued"})) as up:
            provider = openai_provider(up.url, tmp_path)
            try:
                fields: dict[str, Any] = {
                    "prompt": "a cat",
                    "seconds": 8.0,
                    "width": 1280,
                    "height": 720,
                    "seed": 3,
                }
                result = await provider.submit_task(job("text2video", **fields), target(provider, "sora-2"))
            finally:
                await provider.aclose()
        assert result.upstream_id == "video_abc"
        seen = up.seen[0]
        assert (seen.method, seen.path) == ("POST", "/v1/videos")
        assert seen.headers["Authorization"] == f"Bearer {OPENAI_KEY}"
        assert seen.headers["Content-Type"].startswith("multipart/form-data; boundary=")
        assert seen.form == {"prompt": "a cat", "model": "sora-2", "seconds": "8", "size": "1280x720"}
        assert seen.files == {}

    run(main())


def test_openai_create_attaches_the_start_image(tmp_path: Path) -> None:
    upload = InputFile(PNG, "start.png", "image/png")
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()

    async def main() -> list[Seen]:
        async with Upstream(lambda s: j(200, {"id": "video_1"})) as up:
            provider = openai_provider(up.url, tmp_path)
            goal = target(provider, "sora-2-pro")
            try:
                await provider.submit_task(job("image2video", {"image": upload}, prompt="p"), goal)
                await provider.submit_task(job("image2video", prompt="p", image=data_url), goal)
                await provider.submit_task(job("image2video", prompt="p", image="https://x.test/a.png"), goal)
                raw = base64.b64encode(PNG).decode()
                await provider.submit_task(job("image2video", prompt="p", image=raw), goal)
            finally:
                await provider.aclose()
        return up.seen

    uploaded, from_data_url, by_link, from_raw = run(main())
    assert uploaded.files == {"input_reference": ("start.png", "image/png", PNG)}
    assert from_data_url.files == {"input_reference": ("input_reference.png", "image/png", PNG)}
    assert by_link.files == {} and by_link.form["input_reference[image_url]"] == "https://x.test/a.png"
    assert from_raw.files["input_reference"][2] == PNG
    assert all(s.form["model"] == "sora-2-pro" for s in (uploaded, from_data_url, by_link, from_raw))


def test_openai_native_fields_pass_through_with_the_model_mapped() -> None:
    native = {"prompt": "a dog", "model": "client-alias", "seconds": 4, "size": "720x1280", "extra": True}
    submission = job(
        "image2video",
        {"image": InputFile(PNG, "in.png", "image/png")},
        prompt="a dog",
        seconds=4.0,
        native_format="openai",
        native=native,
    )
    fields, files = create_parts(submission, "sora-2")
    assert fields == {
        "prompt": "a dog",
        "seconds": "4",
        "size": "720x1280",
        "extra": "true",
        "model": "sora-2",
    }
    assert files["input_reference"].data == PNG
    # A native multipart form's URL reference is re-attached from the job, once.
    linked = job(
        "image2video",
        prompt="x",
        image="https://x.test/i.png",
        native_format="openai",
        native={"prompt": "x", "input_reference[image_url]": "https://x.test/i.png"},
    )
    assert create_parts(linked, "m")[0] == {
        "prompt": "x",
        "model": "m",
        "input_reference[image_url]": "https://x.test/i.png",
    }


def test_openai_bad_inline_image_is_rejected_before_sending() -> None:
    with pytest.raises(UpstreamRejected) as info:
        create_parts(job("image2video", prompt="p", image="data:image/png;base64,@@@"), "m")
    assert info.value.status == 400
    with pytest.raises(UpstreamRejected):
        create_parts(job("image2video", prompt="p", image="data:image/png,rawbytes"), "m")


def test_openai_remix_posts_the_prompt_to_the_source_video(tmp_path: Path) -> None:
    async def main() -> None:
        async with Upstream(
            lambda s: j(200, {"id": "video_new", "remixed_from_video_id": "video_old"})
        ) as up:
            provider = openai_provider(up.url, tmp_path)
            try:
                result = await provider.submit_task(
                    job("remix", prompt="now at night", remix_of="video_old"), target(provider, "sora-2")
                )
            finally:
                await provider.aclose()
        assert result.upstream_id == "video_new"
        assert (up.seen[0].method, up.seen[0].path) == ("POST", "/v1/videos/video_old/remix")
        assert up.seen[0].json() == {"prompt": "now at night"}

    run(main())


# -- OpenAI: errors --


@pytest.mark.parametrize(
    ("status", "kind", "client_status"),
    [
        (400, UpstreamRejected, 400),
        (404, RouteFailed, 502),  # no such endpoint: the base_url is wrong
        (409, UpstreamRejected, 400),  # SDKs retry 409: a refusal is a 400
        (401, RouteFailed, 502),
        (403, RouteFailed, 502),
        (408, RouteFailed, 504),
        (429, RouteFailed, 429),
        (500, RouteFailed, 502),
        (503, RouteFailed, 503),  # unavailable: the client may retry after Retry-After
    ],
)
def test_openai_error_classes(tmp_path: Path, status: int, kind: type[Exception], client_status: int) -> None:
    error = {"error": {"message": f"bad thing near {OPENAI_KEY}", "type": "x", "code": "bad_size"}}

    async def respond(seen: Seen) -> web.Response:
        resp = j(status, error)
        resp.headers["Retry-After"] = "7"
        return resp

    async def main() -> Exception:
        async with Upstream(respond) as up:
            provider = openai_provider(up.url, tmp_path)
            try:
                await provider.submit_task(job("text2video", prompt="p"), target(provider, "sora-2"))
            except Exception as exc:
                return exc
            finally:
                await provider.aclose()
        raise AssertionError("no error")

    exc = run(main())
    assert isinstance(exc, kind)
    no_secret(str(exc))
    if isinstance(exc, UpstreamRejected):
        assert exc.status == client_status and exc.code == "bad_size"
        assert "bad thing near [redacted]" in exc.message
    else:
        assert isinstance(exc, RouteFailed) and exc.status == client_status
        assert exc.retry_after == ("7" if status in (429, 503) else None)


def test_openai_unreachable_upstream_is_route_failed(tmp_path: Path) -> None:
    async def main() -> None:
        provider = openai_provider("http://127.0.0.1:9", tmp_path)
        try:
            with pytest.raises(RouteFailed):
                await provider.submit_task(job("text2video", prompt="p"), target(provider, "sora-2"))
        finally:
            await provider.aclose()

    run(main())


# -- OpenAI: states, polling, content, delete --


def test_openai_video_states() -> None:
    assert video_state("v", {"status": "queued", "progress": 0}).status == "QUEUED"
    running = video_state("v", {"status": "in_progress", "progress": 42})
    assert (running.status, running.progress) == ("IN_PROGRESS", 42)
    done = video_state("v", {"id": "v", "status": "completed", "seconds": "8", "size": "1280x720"})
    assert (done.status, done.progress) == ("SUCCESS", 100)
    assert done.outputs == [
        {
            "url": "",
            "private": True,
            "id": "v",
            "content_type": "video/mp4",
            "duration": 8.0,
            "width": 1280,
            "height": 720,
        }
    ]
    failed = video_state("v", {"status": "failed", "error": {"code": "moderation_blocked", "message": "no"}})
    assert (failed.status, failed.fail_reason, failed.error_type) == ("FAILURE", "no", "moderation_blocked")
    bare = video_state("v", {"status": "failed"})
    assert bare.fail_reason and bare.error_type == "generation_failed"
    assert video_state("v", {"status": "cancelled"}).status == "UNKNOWN"
    assert video_state("v", {}).status == "UNKNOWN"


def test_openai_poll_is_per_job_bounded_and_survives_bad_jobs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def respond(seen: Seen) -> web.StreamResponse:
        await asyncio.sleep(0.02)
        video_id = seen.path.rsplit("/", 1)[1]
        if video_id == "broken":
            return j(500, {"error": {"message": f"oops {OPENAI_KEY}"}})
        if video_id == "garbled":
            return web.Response(status=200, body=b"<html>", content_type="text/html")
        if video_id == "gone":
            return j(404, {"error": {"message": "No such video"}})
        return j(200, {"id": video_id, "status": "in_progress", "progress": 10})

    ids = [f"video_{n}" for n in range(20)] + ["broken", "garbled", "gone"]

    async def main() -> tuple[dict[str, Any], int]:
        async with Upstream(respond) as up:
            provider = openai_provider(up.url, tmp_path)
            try:
                states = await provider.poll_tasks([TaskRef(i, "text2video") for i in ids], TIMEOUTS)
            finally:
                await provider.aclose()
        return states, up.max_in_flight

    with caplog.at_level(logging.WARNING, logger="unigate.providers"):
        states, most = run(main())
    assert set(states) == {f"video_{n}" for n in range(20)}
    assert all(s.status == "IN_PROGRESS" and s.progress == 10 for s in states.values())
    assert 1 < most <= 8
    warnings = [r.getMessage() for r in caplog.records if r.name == "unigate.providers"]
    assert len(warnings) == 3 and any("broken" in w for w in warnings)
    for text in warnings:
        no_secret(text)


def test_openai_content_relays_the_bytes_with_their_type(tmp_path: Path) -> None:
    async def respond(seen: Seen) -> web.StreamResponse:
        if seen.path.startswith("/v1/videos/video_9/content"):
            kind = "image/webp" if "variant=thumbnail" in seen.path else "video/mp4"
            return web.Response(status=200, body=MP4 if kind == "video/mp4" else PNG, content_type=kind)
        return j(404, {"error": {"message": "Video not found", "code": "not_found"}})

    async def main() -> None:
        async with Upstream(respond) as up:
            provider = openai_provider(up.url, tmp_path)
            output = {"url": "", "private": True, "id": "video_9"}
            try:
                reply = await provider.task_content(
                    TaskRef("video_9", "text2video"), output, "video", TIMEOUTS
                )
                assert reply.content_type == b"video/mp4" and await body_of(reply) == MP4
                thumb = await provider.task_content(
                    TaskRef("video_9", "text2video"), output, "thumbnail", TIMEOUTS
                )
                assert thumb.content_type == b"image/webp" and await body_of(thumb) == PNG
                with pytest.raises(UpstreamRejected) as info:
                    await provider.task_content(TaskRef("video_x", "text2video"), {}, "video", TIMEOUTS)
                assert info.value.status == 404
            finally:
                await provider.aclose()
        assert up.seen[0].path == "/v1/videos/video_9/content?variant=video"
        assert up.seen[0].headers["Authorization"] == f"Bearer {OPENAI_KEY}"

    run(main())


def test_openai_delete_ignores_an_already_deleted_video(tmp_path: Path) -> None:
    async def respond(seen: Seen) -> web.Response:
        video_id = seen.path.rsplit("/", 1)[1]
        if video_id == "video_gone":
            return j(404, {"error": {"message": "not found"}})
        if video_id == "video_down":
            return j(502, {"error": {"message": "bad gateway"}})
        return j(200, {"id": video_id, "object": "video.deleted", "deleted": True})

    async def main() -> None:
        async with Upstream(respond) as up:
            provider = openai_provider(up.url, tmp_path)
            try:
                await provider.delete_task(TaskRef("video_1", "text2video"), TIMEOUTS)
                await provider.delete_task(TaskRef("video_gone", "remix"), TIMEOUTS)
                with pytest.raises(RouteFailed):
                    await provider.delete_task(TaskRef("video_down", "text2video"), TIMEOUTS)
            finally:
                await provider.aclose()
        assert [(s.method, s.path) for s in up.seen] == [
            ("DELETE", "/v1/videos/video_1"),
            ("DELETE", "/v1/videos/video_gone"),
            ("DELETE", "/v1/videos/video_down"),
        ]

    run(main())


# -- Veo: creating jobs --


def test_veo_create_body_from_canonical_fields(tmp_path: Path) -> None:
    async def main() -> None:
        async with Upstream(lambda s: j(200, {"name": OP})) as up:
            provider = gemini_provider(up.url, tmp_path)
            submission = job(
                "image2video",
                {"image": InputFile(PNG, "a.png", "application/octet-stream")},
                prompt="waves",
                negative_prompt="people",
                seconds=6.0,
                width=720,
                height=1280,
                seed=5,
                metadata={"person_generation": "allow_adult", "enhancePrompt": True},
            )
            try:
                result = await provider.submit_task(submission, target(provider, "veo-3.0-generate-001"))
            finally:
                await provider.aclose()
        assert result.upstream_id == OP
        seen = up.seen[0]
        assert (seen.method, seen.path) == ("POST", "/v1beta/models/veo-3.0-generate-001:predictLongRunning")
        assert seen.headers["x-goog-api-key"] == GOOGLE_KEY and "key=" not in seen.path
        assert seen.json() == {
            "instances": [
                {
                    "prompt": "waves",
                    "image": {"bytesBase64Encoded": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
                }
            ],
            "parameters": {
                "aspectRatio": "9:16",
                "durationSeconds": 6,
                "negativePrompt": "people",
                "resolution": "720p",
                "sampleCount": 1,
                "personGeneration": "allow_adult",
                "enhancePrompt": True,
            },
        }

    run(main())


def test_veo_image_forms_and_parameters() -> None:
    raw = base64.b64encode(PNG).decode()
    from_data_url = veo_body(job("image2video", prompt="p", image=f"data:image/jpeg;base64,{raw}"))
    assert from_data_url["instances"][0]["image"] == {"bytesBase64Encoded": raw, "mimeType": "image/jpeg"}
    from_raw = veo_body(job("image2video", image=raw))
    assert from_raw["instances"] == [{"image": {"bytesBase64Encoded": raw, "mimeType": "image/png"}}]
    wide = veo_body(job("text2video", prompt="p", width=1920, height=1080))["parameters"]
    assert (wide["aspectRatio"], wide["resolution"]) == ("16:9", "1080p")
    given = veo_body(job("text2video", prompt="p", aspect_ratio="9:16"))["parameters"]
    assert given == {"aspectRatio": "9:16", "sampleCount": 1}
    assert veo_body(job("text2video", prompt="p"))["parameters"] == {"sampleCount": 1}
    with pytest.raises(UpstreamRejected) as info:
        veo_body(job("image2video", prompt="p", image="https://x.test/a.png"))
    assert info.value.status == 400


def test_veo_native_body_is_sent_as_is(tmp_path: Path) -> None:
    native = {
        "instances": [{"prompt": "fox", "image": {"bytesBase64Encoded": "AAAA", "mimeType": "image/png"}}],
        "parameters": {"aspectRatio": "16:9", "durationSeconds": 8, "personGeneration": "allow_all"},
    }

    async def main() -> None:
        async with Upstream(lambda s: j(200, {"name": OP})) as up:
            provider = gemini_provider(up.url, tmp_path)
            submission = job("image2video", prompt="fox", native_format="veo", native=native)
            try:
                await provider.submit_task(submission, target(provider, "models/veo-2.0-generate-001"))
            finally:
                await provider.aclose()
        assert up.seen[0].path == "/v1beta/models/veo-2.0-generate-001:predictLongRunning"
        assert up.seen[0].json() == native

    run(main())


def test_veo_refuses_remix_and_bad_answers(tmp_path: Path) -> None:
    async def respond(seen: Seen) -> web.Response:
        if "bad-name" in seen.path:
            return j(200, {"name": "../../etc"})
        if "rejecting" in seen.path:
            return j(400, {"error": {"code": 400, "message": "bad duration", "status": "INVALID_ARGUMENT"}})
        if "busy" in seen.path:
            return j(429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
        return j(
            403,
            {"error": {"code": 403, "message": f"key {GOOGLE_KEY} denied", "status": "PERMISSION_DENIED"}},
        )

    async def main() -> None:
        async with Upstream(respond) as up:
            provider = gemini_provider(up.url, tmp_path)
            try:
                with pytest.raises(InvalidRequest) as unsupported:
                    await provider.submit_task(job("remix", prompt="p", remix_of=OP), target(provider, "veo"))
                assert unsupported.value.code == "unsupported_operation"
                with pytest.raises(RouteFailed):
                    await provider.submit_task(job("text2video", prompt="p"), target(provider, "bad-name"))
                with pytest.raises(UpstreamRejected) as rejected:
                    await provider.submit_task(job("text2video", prompt="p"), target(provider, "rejecting"))
                assert (rejected.value.status, rejected.value.code) == (400, "INVALID_ARGUMENT")
                assert rejected.value.message == "bad duration"
                with pytest.raises(RouteFailed) as busy:
                    await provider.submit_task(job("text2video", prompt="p"), target(provider, "busy"))
                assert busy.value.status == 429
                with pytest.raises(RouteFailed) as denied:
                    await provider.submit_task(job("text2video", prompt="p"), target(provider, "denied"))
                no_secret(str(denied.value))
            finally:
                await provider.aclose()
        assert len(up.seen) == 4  # the remix never reached the upstream

    run(main())


# -- Veo: states and polling --


def test_veo_operation_states() -> None:
    assert operation_state(OP, {"name": OP}).status == "IN_PROGRESS"
    running = operation_state(OP, {"name": OP, "done": False, "metadata": {"progressPercent": 30}})
    assert (running.status, running.progress) == ("IN_PROGRESS", 30)
    uri = "https://generativelanguage.googleapis.com/v1beta/files/abc:download?alt=media"
    done = operation_state(
        OP,
        {
            "done": True,
            "response": {"generateVideoResponse": {"generatedSamples": [{"video": {"uri": uri}}]}},
        },
    )
    assert done.status == "SUCCESS"
    assert done.outputs == [{"url": uri, "private": True, "content_type": "video/mp4"}]
    error = {"code": 400, "message": "Unsupported duration", "status": "INVALID_ARGUMENT"}
    failed = operation_state(OP, {"done": True, "error": error})
    assert (failed.status, failed.fail_reason, failed.error_type) == (
        "FAILURE",
        "Unsupported duration",
        "INVALID_ARGUMENT",
    )
    filtered = operation_state(
        OP,
        {
            "done": True,
            "response": {
                "generateVideoResponse": {
                    "raiMediaFilteredCount": 1,
                    "raiMediaFilteredReasons": ["The prompt mentions a celebrity."],
                }
            },
        },
    )
    assert (filtered.status, filtered.error_type) == ("FAILURE", "content_filtered")
    assert filtered.fail_reason == "The prompt mentions a celebrity."
    empty = operation_state(OP, {"done": True, "response": {"generateVideoResponse": {}}})
    assert empty.status == "FAILURE" and empty.error_type == "generation_failed"


def test_veo_poll_gets_each_operation_and_leaves_failures_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def respond(seen: Seen) -> web.Response:
        name = seen.path.removeprefix("/v1beta/")
        if name.endswith("/down"):
            return j(503, {"error": {"code": 503, "message": "unavailable", "status": "UNAVAILABLE"}})
        if name.endswith("/garbled"):
            return web.Response(status=200, body=b"not json")
        return j(200, {"name": name, "done": True, "response": {"generateVideoResponse": {}}})

    names = ["models/veo/operations/a", "models/veo/operations/down", "models/veo/operations/garbled"]

    async def main() -> dict[str, Any]:
        async with Upstream(respond) as up:
            provider = gemini_provider(up.url, tmp_path)
            try:
                refs = [TaskRef(n, "text2video") for n in [*names, "../escape"]]
                states = await provider.poll_tasks(refs, TIMEOUTS)
            finally:
                await provider.aclose()
        assert all(s.headers["x-goog-api-key"] == GOOGLE_KEY for s in up.seen)
        assert sorted(s.path for s in up.seen) == sorted(f"/v1beta/{n}" for n in names)
        return states

    with caplog.at_level(logging.WARNING, logger="unigate.providers"):
        states = run(main())
    assert list(states) == ["models/veo/operations/a"]
    assert len([r for r in caplog.records if r.name == "unigate.providers"]) == 2
    for record in caplog.records:
        no_secret(record.getMessage())


# -- Veo: downloads across redirects --


def test_veo_download_follows_redirects_without_leaking_the_key(tmp_path: Path) -> None:
    store_url: list[str] = []

    def home(seen: Seen) -> web.StreamResponse:
        if seen.path.startswith("/v1beta/files/abc:download"):
            # A relative hop on the provider's own origin first, then off to storage.
            raise web.HTTPFound("/v1beta/files/abc:redirected")
        if seen.path == "/v1beta/files/abc:redirected":
            raise web.HTTPTemporaryRedirect(f"{store_url[0]}/blob/abc.mp4?sig=xyz")
        return j(404, {"error": {"code": 404, "message": "no", "status": "NOT_FOUND"}})

    def store(seen: Seen) -> web.StreamResponse:
        if seen.path.startswith("/blob/abc.mp4"):
            return web.Response(body=MP4, content_type="video/mp4")
        return web.Response(status=404, text="gone")

    async def main() -> None:
        async with Upstream(home) as home_up, Upstream(store) as store_up:
            store_url.append(store_up.url)  # another port: another origin
            provider = gemini_provider(home_up.url, tmp_path)
            uri = f"{home_up.url}/v1beta/files/abc:download?alt=media"
            try:
                reply = await provider.task_content(
                    TaskRef(OP, "text2video"), {"url": uri}, "video", TIMEOUTS
                )
                assert reply.status == 200 and reply.content_type == b"video/mp4"
                assert await body_of(reply) == MP4
                # A second download reuses the cached storage pool.
                again = await provider.task_content(
                    TaskRef(OP, "text2video"), {"url": uri}, "video", TIMEOUTS
                )
                assert await body_of(again) == MP4
            finally:
                await provider.aclose()
        assert [s.path for s in home_up.seen][:2] == [
            "/v1beta/files/abc:download?alt=media",
            "/v1beta/files/abc:redirected",
        ]
        assert all(s.headers.get("x-goog-api-key") == GOOGLE_KEY for s in home_up.seen)
        assert [s.path for s in store_up.seen] == ["/blob/abc.mp4?sig=xyz"] * 2
        for seen in store_up.seen:
            assert "x-goog-api-key" not in {k.lower() for k in seen.headers}
            assert GOOGLE_KEY not in repr(seen.headers)

    run(main())


def test_veo_download_refusals(tmp_path: Path) -> None:
    def home(seen: Seen) -> web.StreamResponse:
        if seen.path.startswith("/v1beta/files/loop"):
            raise web.HTTPFound("/v1beta/files/loop-again")
        if seen.path.startswith("/v1beta/files/missing"):
            return j(404, {"error": {"code": 404, "message": "File not found", "status": "NOT_FOUND"}})
        if seen.path.startswith("/v1beta/files/ftp"):
            raise web.HTTPFound("ftp://127.0.0.1/file")
        return web.Response(status=500, text="boom")

    async def main() -> None:
        async with Upstream(home) as up:
            provider = gemini_provider(up.url, tmp_path)
            ref = TaskRef(OP, "text2video")

            async def content(path: str, variant: str = "video") -> Reply:
                return await provider.task_content(ref, {"url": f"{up.url}{path}"}, variant, TIMEOUTS)

            try:
                with pytest.raises(RouteFailed, match="redirected more than 3"):
                    await content("/v1beta/files/loop")
                assert len(up.seen) == 4
                with pytest.raises(UpstreamRejected) as missing:
                    await content("/v1beta/files/missing")
                assert missing.value.status == 404
                with pytest.raises(RouteFailed, match="http"):
                    await content("/v1beta/files/ftp")
                with pytest.raises(RouteFailed):
                    await content("/v1beta/files/boom")
                with pytest.raises(NotFound):
                    await content("/v1beta/files/x", "thumbnail")
                with pytest.raises(RouteFailed, match="http"):
                    await provider.task_content(ref, {"url": "file:///etc/passwd"}, "video", TIMEOUTS)
            finally:
                await provider.aclose()

    run(main())


def test_download_pools_cache_a_few_origins() -> None:
    async def main() -> None:
        pools = DownloadPools(limit=2)
        a, owned_a = pools.lease("http://127.0.0.1:1")
        assert pools.lease("http://127.0.0.1:1") == (a, False) and not owned_a
        _, owned_b = pools.lease("http://127.0.0.1:2")
        extra, owned_c = pools.lease("http://127.0.0.1:3")
        assert not owned_b and owned_c  # the cache is full: a one-off pool, the caller's to close
        assert pools.lease("http://127.0.0.1:3")[0] is not extra
        await extra.aclose()
        await pools.aclose()

    run(main())


# -- in-process integration: the adapters against the fake vendor servers --


async def poll_until_final(provider: Provider, ref: TaskRef, polls: int = 20) -> list[UpstreamTask]:
    """Every state seen until a final one (or `polls` polls)."""
    seen: list[UpstreamTask] = []
    for _ in range(polls):
        state = (await provider.poll_tasks([ref], TIMEOUTS)).get(ref.upstream_id)
        assert state is not None
        seen.append(state)
        if state.status in ("SUCCESS", "FAILURE"):
            break
    return seen


def test_openai_adapter_against_the_fake_videos_api(tmp_path: Path) -> None:
    upload = InputFile(PNG, "start.png", "image/png")

    async def main(fake: FakeOpenAIVideos) -> None:
        config = ProviderConfig(name="oa", protocol="openai", base_url=fake.base_url, api_key=fake.api_key)
        provider = protocol_class("openai")(config, ProviderContext(data_dir=tmp_path))
        try:
            submission = job(
                "image2video", {"image": upload}, prompt="a lighthouse", seconds=4.0, size="1280x720"
            )
            created = await provider.submit_task(submission, target(provider, "sora-2"))
            ref = TaskRef(created.upstream_id, "image2video")
            states = await poll_until_final(provider, ref)
            assert [s.status for s in states] == ["QUEUED", "IN_PROGRESS", "SUCCESS"]
            output = states[-1].outputs[0]
            assert output["private"] and output["id"] == created.upstream_id
            video = await provider.task_content(ref, output, "video", TIMEOUTS)
            assert video.content_type == b"video/mp4"
            decoded = decode_video(await body_of(video))
            assert decoded.codec == "h264" and decoded.frames > 0
            thumb = await provider.task_content(ref, output, "thumbnail", TIMEOUTS)
            assert thumb.content_type == b"image/webp" and (await body_of(thumb))[8:12] == b"WEBP"

            remix = await provider.submit_task(
                job("remix", prompt="at night", remix_of=created.upstream_id), target(provider, "sora-2")
            )
            assert remix.upstream_id != created.upstream_id
            await provider.delete_task(ref, TIMEOUTS)
            await provider.delete_task(ref, TIMEOUTS)  # already gone: not an error
            with pytest.raises(UpstreamRejected) as gone:
                await provider.task_content(ref, output, "video", TIMEOUTS)
            assert gone.value.status == 404

            fake.reset(script="fail")
            failing = await provider.submit_task(job("text2video", prompt="p"), target(provider, "sora-2"))
            failed = (await poll_until_final(provider, TaskRef(failing.upstream_id, "text2video")))[-1]
            assert (failed.status, failed.error_type) == ("FAILURE", FAKE_VIDEOS_FAIL_CODE)

            fake.reset(script="unknown")
            odd = await provider.submit_task(job("text2video", prompt="p"), target(provider, "sora-2"))
            odd_states = await poll_until_final(provider, TaskRef(odd.upstream_id, "text2video"))
            assert "UNKNOWN" in [s.status for s in odd_states] and odd_states[-1].status == "SUCCESS"
        finally:
            await provider.aclose()
        first = fake.submits()[0]
        assert first.params()["model"] == "sora-2" and first.params()["seconds"] == "4"
        assert first.files["input_reference"][0].size == len(PNG)

    with FakeOpenAIVideos() as fake:
        run(main(fake))


def test_veo_adapter_against_the_fake_gemini_api(tmp_path: Path) -> None:
    async def main(fake: FakeVeo) -> None:
        config = ProviderConfig(name="gm", protocol="gemini", base_url=fake.base_url, api_key=fake.api_key)
        provider = protocol_class("gemini")(config, ProviderContext(data_dir=tmp_path))
        model = "veo-3.0-generate-001"
        try:
            submission = job(
                "image2video", {"image": InputFile(PNG, "a.png", "image/png")}, prompt="surf", seconds=8.0
            )
            created = await provider.submit_task(submission, target(provider, model))
            assert created.upstream_id.startswith(f"models/{model}/operations/")
            ref = TaskRef(created.upstream_id, "image2video")
            states = await poll_until_final(provider, ref)
            assert [s.status for s in states][-1] == "SUCCESS"
            assert all(s.status == "IN_PROGRESS" for s in states[:-1])
            output = states[-1].outputs[0]
            assert output["private"] and output["url"].startswith(fake.root)
            video = await provider.task_content(ref, output, "video", TIMEOUTS)  # via the fake's 302
            assert video.content_type == b"video/mp4"
            decoded = decode_video(await body_of(video))
            assert decoded.codec == "h264" and decoded.frames > 0

            for script, error_type in (("filtered", "content_filtered"), ("fail", "INTERNAL")):
                fake.reset(script=script)
                failing = await provider.submit_task(job("text2video", prompt="p"), target(provider, model))
                final = (await poll_until_final(provider, TaskRef(failing.upstream_id, "text2video")))[-1]
                assert (final.status, final.error_type) == ("FAILURE", error_type) and final.fail_reason
        finally:
            await provider.aclose()
        first = fake.submits()[0]
        assert first.json["parameters"] == {"durationSeconds": 8, "sampleCount": 1}
        assert first.json["instances"][0]["image"]["mimeType"] == "image/png"
        assert all(
            c.headers.get("x-goog-api-key") == fake.api_key for c in fake.calls() if c.kind != "download"
        )
        assert all("key=" not in c.path for c in fake.calls())

    with FakeVeo() as fake:
        run(main(fake))
