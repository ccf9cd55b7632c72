"""Self-tests of the fake task upstreams (Kling, Vidu, PicWish, OpenAI Videos, Veo), the shared
timeline/recording base and the task fixtures: each fake over real HTTP on 127.0.0.1 through
an ok and a fail timeline, credential refusal, submit_reject, and a result download."""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import pytest

from tests.support import task_fixtures
from tests.support.fake_kling import FakeKling, decode_jwt, mint_token
from tests.support.fake_openai_videos import FakeOpenAIVideos
from tests.support.fake_picwish import FakePicWish
from tests.support.fake_tasks import FAILED, QUEUED, RUNNING, SUCCESS, UNKNOWN
from tests.support.fake_veo import RESPONSE_TYPE, FakeVeo
from tests.support.fake_vidu import FakeVidu
from tests.support.media_fixtures import image_info
from tests.support.net import HTTPResult, http
from tests.support.video import decode_video
from unigate.providers.tasks.kling import KlingKeys, mint_jwt


def multipart(
    fields: Sequence[tuple[str, str]], files: Sequence[tuple[str, str, str, bytes]] = ()
) -> tuple[bytes, dict[str, str]]:
    """A hand-built multipart/form-data body: (body, headers with the Content-Type)."""
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    for name, filename, ctype, data in files:
        out += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {ctype}\r\n\r\n"
        ).encode()
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def poll_until(
    fetch: Callable[[], HTTPResult], done: Callable[[HTTPResult], bool], limit: int = 12
) -> HTTPResult:
    for _ in range(limit):
        answer = fetch()
        if done(answer):
            return answer
    raise AssertionError(f"not done after {limit} polls; last: {answer.status} {answer.body[:300]!r}")


def get_bytes(url: str, headers: dict[str, str] | None = None) -> HTTPResult:
    result = http("GET", url, headers=headers)
    assert result.status == 200, (result.status, result.body[:200])
    return result


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def get_no_redirect(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=10) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the response's connection
            return exc.code, dict(exc.headers)


# ------------------------------------------------------------------------- fixtures


def test_task_fixtures_are_real_media() -> None:
    with_audio, silent = decode_video(task_fixtures.mp4()), decode_video(task_fixtures.mp4(audio=False))
    assert (with_audio.codec, with_audio.width, with_audio.height) == ("h264", 160, 96)
    assert with_audio.audio_seconds > 0.9 and silent.audio_seconds == 0 and silent.frames == 12
    assert image_info(task_fixtures.png())[0] == "png"
    assert image_info(task_fixtures.webp_thumbnail()) == ("webp", 160, 96)
    assert image_info(task_fixtures.jpeg_spritesheet()) == ("jpeg", 320, 96)
    makers = (
        task_fixtures.mp4,
        task_fixtures.png,
        task_fixtures.jpeg_cover,
        task_fixtures.webp_thumbnail,
        task_fixtures.mp3_clip,
        task_fixtures.text_file,
    )
    kinds = {task_fixtures.sniff(make()) for make in makers}
    assert kinds == {"mp4", "png", "jpeg", "webp", "mp3", "txt"}
    assert task_fixtures.mp4() is task_fixtures.mp4()  # made once per process


# ------------------------------------------------------------------------- Kling


@pytest.fixture
def kling() -> Iterator[FakeKling]:
    with FakeKling() as fake:
        yield fake


def _kling_auth(fake: FakeKling) -> dict[str, str]:
    keys = KlingKeys.parse(fake.gateway_key)
    assert keys is not None
    return {"Authorization": f"Bearer {mint_jwt(keys, time.time())}"}  # the gateway's own token


def test_kling_ok_timeline_by_external_id_and_download(kling: FakeKling) -> None:
    auth = _kling_auth(kling)
    body = {
        "model_name": "kling-v2-6",
        "prompt": "a fox",
        "duration": "10",
        "sound": "on",
        "external_task_id": "e1",
    }
    created = http("POST", f"{kling.base_url}/v1/videos/text2video", body, auth).json()
    assert created["code"] == 0 and created["message"] == "SUCCEED"
    data = created["data"]
    assert data["task_status"] == "submitted" and data["task_info"] == {"external_task_id": "e1"}
    assert data["created_at"] > 1e12  # milliseconds
    statuses = []

    def fetch() -> HTTPResult:
        answer = http("GET", f"{kling.base_url}/v1/videos/text2video/e1", headers=auth)
        statuses.append(answer.json()["data"]["task_status"])
        return answer

    done = poll_until(fetch, lambda a: a.json()["data"]["task_status"] == "succeed").json()["data"]
    assert statuses == ["submitted", "processing", "succeed"]
    [video] = done["task_result"]["videos"]
    assert video["duration"] == "10" and done["task_id"] == data["task_id"]
    file = get_bytes(video["url"])
    assert file.headers["content-type"] == "video/mp4" and task_fixtures.sniff(file.body) == "mp4"
    assert decode_video(file.body).audio_seconds > 0  # sound: on
    assert kling.served(data["task_id"]) == [QUEUED, RUNNING, SUCCESS]
    [submit] = kling.submits()
    assert submit.json == body and submit.job_id == data["task_id"]
    assert decode_jwt(submit.headers["authorization"].split(" ", 1)[1])[1]["iss"] == kling.access_key
    assert [c.status for c in kling.polls()] == [200, 200, 200] and len(kling.downloads()) == 1
    # the same task under the other action is unknown
    wrong = http("GET", f"{kling.base_url}/v1/videos/image2video/{data['task_id']}", headers=auth)
    assert wrong.status == 404 and wrong.json()["code"] == 1203


def test_kling_fail_timeline(kling: FakeKling) -> None:
    kling.reset(script="fail", fail_reason="risk control")
    auth = {"Authorization": f"Bearer {kling.mint()}"}
    image = base64.b64encode(task_fixtures.png()).decode()
    created = http("POST", f"{kling.base_url}/v1/videos/image2video", {"image": image}, auth).json()["data"]
    url = f"{kling.base_url}/v1/videos/image2video/{created['task_id']}"
    done = poll_until(
        lambda: http("GET", url, headers=auth), lambda a: a.json()["data"]["task_status"] == "failed"
    )
    data = done.json()["data"]
    assert data["task_status_msg"] == "risk control" and "task_result" not in data


def test_kling_refuses_bad_tokens_and_rejects(kling: FakeKling) -> None:
    url = f"{kling.base_url}/v1/videos/text2video"
    body = {"prompt": "a fox"}
    now = time.time()
    cases = {
        1001: {},
        1002: {"Authorization": f"Token {kling.mint()}"},
        1000: {"Authorization": f"Bearer {mint_token(kling.access_key, 'another-secret')}"},
        1004: {"Authorization": f"Bearer {kling.mint(now - 4000)}"},
        1003: {"Authorization": f"Bearer {kling.mint(nbf=int(now) + 600)}"},
    }
    for code, headers in cases.items():
        answer = http("POST", url, body, headers)
        assert (answer.status, answer.json()["code"]) == (401, code), code
        assert answer.json()["request_id"]
    too_long = http("POST", url, body, {"Authorization": f"Bearer {kling.mint(exp=int(now) + 7200)}"})
    assert (too_long.status, too_long.json()["code"]) == (401, 1002)
    auth = {"Authorization": f"Bearer {kling.mint()}"}
    data_url = "data:image/png;base64," + base64.b64encode(task_fixtures.png()).decode()
    bad = http("POST", f"{kling.base_url}/v1/videos/image2video", {"image": data_url}, auth)
    assert (bad.status, bad.json()["code"]) == (400, 1201)
    kling.reset(submit_reject=True)
    rejected = http("POST", url, body, auth)
    assert (rejected.status, rejected.json()["code"]) == (400, 1201)
    kling.reset(submit_status=429)
    assert http("POST", url, body, auth).json()["code"] == 1302
    assert kling.jobs == {} and all(c.job_id is None for c in kling.submits())


# ------------------------------------------------------------------------- Vidu


@pytest.fixture
def vidu() -> Iterator[FakeVidu]:
    with FakeVidu() as fake:
        yield fake


def test_vidu_text2audio_and_img2video_ok(vidu: FakeVidu) -> None:
    auth = {"Authorization": f"Token {vidu.api_key}"}
    created = http(
        "POST", f"{vidu.base_url}/ent/v2/text2audio", {"model": "audio1.0", "prompt": "rain"}, auth
    )
    task = created.json()
    assert task["state"] == "created" and task["duration"] == 10 and task["seed"] > 0 and task["created_at"]
    url = f"{vidu.base_url}/ent/v2/tasks/{task['task_id']}/creations"
    done = poll_until(lambda: http("GET", url, headers=auth), lambda a: a.json()["state"] == "success").json()
    assert vidu.served(task["task_id"]) == [QUEUED, RUNNING, SUCCESS]
    audio = get_bytes(done["creations"][0]["url"])
    assert audio.headers["content-type"] == "audio/mpeg" and task_fixtures.sniff(audio.body) == "mp3"

    image = "data:image/png;base64," + base64.b64encode(task_fixtures.png()).decode()
    body = {"model": "viduq1", "images": [image], "prompt": "wave", "duration": 5}
    video_task = http("POST", f"{vidu.base_url}/ent/v2/img2video", body, auth).json()
    url = f"{vidu.base_url}/ent/v2/tasks/{video_task['task_id']}/creations"
    done = poll_until(lambda: http("GET", url, headers=auth), lambda a: a.json()["state"] == "success").json()
    [creation] = done["creations"]
    assert task_fixtures.sniff(get_bytes(creation["url"]).body) == "mp4"
    cover = get_bytes(creation["cover_url"])
    assert cover.headers["content-type"] == "image/jpeg" and task_fixtures.sniff(cover.body) == "jpeg"


def test_vidu_fail_auth_and_reject(vidu: FakeVidu) -> None:
    auth = {"Authorization": f"Token {vidu.api_key}"}
    body = {"video_url": "https://example.com/v.mp4", "audio_url": "https://example.com/a.mp3"}
    vidu.reset(script="fail")
    task = http("POST", f"{vidu.base_url}/ent/v2/lip-sync", body, auth).json()
    url = f"{vidu.base_url}/ent/v2/tasks/{task['task_id']}/creations"
    done = poll_until(lambda: http("GET", url, headers=auth), lambda a: a.json()["state"] == "failed").json()
    assert done["err_code"] == "CreationPolicyViolation" and done["creations"] == []

    bearer = http(
        "POST", f"{vidu.base_url}/ent/v2/lip-sync", body, {"Authorization": f"Bearer {vidu.api_key}"}
    )
    assert bearer.status == 401 and bearer.json()["reason"] == "Unauthorized"
    assert vidu.calls()[-1].note == "vidu auth: scheme must be Token"
    vidu.reset(submit_reject=True, reject_reason="CreditInsufficient")
    rejected = http("POST", f"{vidu.base_url}/ent/v2/lip-sync", body, auth)
    assert rejected.status == 400 and rejected.json() == {
        "code": 400,
        "reason": "CreditInsufficient",
        "message": "The request was rejected (fake).",
        "metadata": {},
    }
    missing = http("GET", f"{vidu.base_url}/ent/v2/tasks/nope/creations", headers=auth)
    assert missing.status == 404 and missing.json()["reason"] == "TaskNotFound"


def test_timeline_knobs_on_one_fake(vidu: FakeVidu) -> None:
    """The shared base: polls_per_stage, unknown, manual + advance, stall, poll_status, reset."""
    auth = {"Authorization": f"Token {vidu.api_key}"}
    body = {"model": "viduq1", "prompt": "a cat"}

    def submit() -> str:
        return str(http("POST", f"{vidu.base_url}/ent/v2/text2video", body, auth).json()["task_id"])

    def states(task_id: str, n: int) -> list[str]:
        url = f"{vidu.base_url}/ent/v2/tasks/{task_id}/creations"
        return [http("GET", url, headers=auth).json()["state"] for _ in range(n)]

    vidu.reset(polls_per_stage=2)
    assert states(submit(), 5) == ["queueing", "queueing", "processing", "processing", "success"]
    vidu.reset(script="unknown", unknown_stages=2)
    slow = submit()
    vidu.reset(script="stall")  # a job's timeline is fixed at submit
    assert states(slow, 5) == ["queueing", "processing", "scheduling", "scheduling", "success"]
    assert vidu.served(slow) == [QUEUED, RUNNING, UNKNOWN, UNKNOWN, SUCCESS]
    assert states(submit(), 4) == ["queueing", "processing", "processing", "processing"]
    vidu.reset(manual=True)
    held = submit()
    assert states(held, 2) == ["queueing", "queueing"]
    assert vidu.advance(held) == RUNNING and states(held, 1) == ["processing"]
    assert vidu.advance(held, 5) == SUCCESS and states(held, 1) == ["success"]
    vidu.reset(poll_status=503)
    failing = http("GET", f"{vidu.base_url}/ent/v2/tasks/{held}/creations", headers=auth)
    assert failing.status == 503 and failing.json()["reason"] == "ServiceUnavailable"
    assert vidu.job(held).polls == 4 and len(vidu.polls(held)) == 5  # the refused poll is recorded
    assert http("GET", f"{vidu.base_url}/nowhere").status == 404 and vidu.calls()[-1].status == 404
    with pytest.raises(ValueError):
        vidu.reset(script="bogus")


# ------------------------------------------------------------------------- PicWish


@pytest.fixture
def picwish() -> Iterator[FakePicWish]:
    with FakePicWish() as fake:
        yield fake


def test_picwish_segmentation_upload_and_ocr_url(picwish: FakePicWish) -> None:
    auth = {"X-API-KEY": picwish.api_key}
    form, headers = multipart(
        [("output_type", "1"), ("sync", "0")], [("image_file", "in.png", "image/png", task_fixtures.png())]
    )
    created = http(
        "POST", f"{picwish.base_url}/api/tasks/visual/segmentation", form, {**auth, **headers}
    ).json()
    assert created["status"] == 200 and created["message"] == "success"
    task_id = created["data"]["task_id"]
    [submit] = picwish.submits()
    [upload] = submit.files["image_file"]
    assert (upload.filename, upload.size) == ("in.png", len(task_fixtures.png()))
    url = f"{picwish.base_url}/api/tasks/visual/segmentation/{task_id}"
    seen: list[int] = []

    def fetch() -> HTTPResult:
        answer = http("GET", url, headers=auth)
        seen.append(answer.json()["data"]["state"])
        return answer

    data = poll_until(fetch, lambda a: a.json()["data"]["state"] == 1).json()["data"]
    assert seen == [0, 4, 1] and data["progress"] == 100 and data["completed_at"] >= data["created_at"]
    for key in ("image", "mask"):
        file = get_bytes(data[key])
        assert file.headers["content-type"] == "image/png" and task_fixtures.sniff(file.body) == "png"

    ocr, form_headers = (
        b"image_url=https%3A%2F%2Fexample.com%2Fdoc.png&sync=1&format=txt",
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    synced = http("POST", f"{picwish.base_url}/api/tasks/document/ocr", ocr, {**auth, **form_headers}).json()
    assert synced["data"]["state"] == 1
    text = get_bytes(synced["data"]["file"])
    assert text.headers["content-type"].startswith("text/plain") and task_fixtures.sniff(text.body) == "txt"


def test_picwish_fail_auth_and_bad_input(picwish: FakePicWish) -> None:
    auth = {"X-API-KEY": picwish.api_key}
    url = f"{picwish.base_url}/api/tasks/visual/scale"
    picwish.reset(script="fail", fail_state=-8)
    task_id = http("POST", url, {"image_url": "https://example.com/a.png"}, auth).json()["data"]["task_id"]
    data = poll_until(
        lambda: http("GET", f"{url}/{task_id}", headers=auth), lambda a: a.json()["data"]["state"] < 0
    ).json()["data"]
    assert data["state"] == -8 and data["state_detail"] and "image" not in data

    refused = http("POST", url, {"image_url": "https://example.com/a.png"}, {"X-API-KEY": "wrong"})
    assert refused.status == 401 and refused.json()["status"] == 401
    form, headers = multipart(
        [("image_url", "https://example.com/a.png")],
        [("image_file", "a.png", "image/png", task_fixtures.png())],
    )
    both = http("POST", url, form, {**auth, **headers})
    assert both.status == 400 and both.json()["status"] == 400
    assert http("POST", url, {"sync": 0}, auth).status == 400  # neither
    picwish.reset(submit_reject=True)
    assert http("POST", url, {"image_url": "https://example.com/a.png"}, auth).status == 400
    unknown = http("GET", f"{url}/{uuid.uuid4()}", headers=auth)
    assert unknown.status == 404 and unknown.json() == {"status": 404, "message": "Task not found"}


# ------------------------------------------------------------------------- OpenAI Videos


@pytest.fixture
def oai_videos() -> Iterator[FakeOpenAIVideos]:
    with FakeOpenAIVideos() as fake:
        yield fake


def test_openai_videos_through_the_sdk(oai_videos: FakeOpenAIVideos) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=oai_videos.base_url, api_key=oai_videos.api_key, max_retries=0)
    video = client.videos.create(
        prompt="a red kite",
        seconds="8",
        size="1280x720",
        input_reference=("ref.png", task_fixtures.png(), "image/png"),
    )
    assert (video.status, video.progress, video.seconds, video.size, video.model) == (
        "queued",
        0,
        "8",
        "1280x720",
        "sora-2",
    )
    [submit] = oai_videos.submits()
    assert (
        submit.fields["prompt"] == ["a red kite"] and submit.files["input_reference"][0].filename == "ref.png"
    )
    with pytest.raises(openai.NotFoundError):
        client.videos.download_content(video.id)  # not completed yet
    statuses = [client.videos.retrieve(video.id).status for _ in range(3)]
    assert statuses == ["queued", "in_progress", "completed"]
    done = client.videos.retrieve(video.id)
    assert done.progress == 100 and done.completed_at and done.expires_at and done.error is None
    magic = {"video": "mp4", "thumbnail": "webp", "spritesheet": "jpeg"}
    for variant, kind in magic.items():
        assert task_fixtures.sniff(client.videos.download_content(video.id, variant=variant).read()) == kind
    remix = client.videos.remix(video.id, prompt="a blue kite")
    assert remix.remixed_from_video_id == video.id and remix.seconds == "8"
    page = client.videos.list(order="asc", limit=1)
    assert [v.id for v in page.data] == [video.id] and page.has_more
    deleted = client.videos.delete(video.id)
    assert deleted.deleted and deleted.object == "video.deleted"
    with pytest.raises(openai.NotFoundError):
        client.videos.retrieve(video.id)


def test_openai_videos_fail_auth_and_reject(oai_videos: FakeOpenAIVideos) -> None:
    auth = {"Authorization": f"Bearer {oai_videos.api_key}"}
    oai_videos.reset(script="fail")
    video = http("POST", f"{oai_videos.base_url}/videos", {"prompt": "x", "seconds": "4"}, auth).json()
    url = f"{oai_videos.base_url}/videos/{video['id']}"
    done = poll_until(lambda: http("GET", url, headers=auth), lambda a: a.json()["status"] == "failed").json()
    assert done["error"]["code"] == "video_generation_failed" and done["completed_at"]
    assert http("GET", f"{url}/content", headers=auth).status == 404

    refused = http("GET", url, headers={"Authorization": "Bearer nope"})
    assert refused.status == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert refused.headers["x-request-id"].startswith("req_")
    bad = http("POST", f"{oai_videos.base_url}/videos", {"prompt": "x", "seconds": 5}, auth)
    assert bad.status == 400 and bad.json()["error"]["param"] == "seconds"
    oai_videos.reset(submit_reject=True)
    rejected = http("POST", f"{oai_videos.base_url}/videos", {"prompt": "x"}, auth)
    assert rejected.status == 400 and rejected.json()["error"]["code"] == "moderation_blocked"
    assert set(rejected.json()["error"]) == {"message", "type", "param", "code"}


# ------------------------------------------------------------------------- Veo


@pytest.fixture
def veo() -> Iterator[FakeVeo]:
    with FakeVeo() as fake:
        yield fake


def test_veo_ok_timeline_and_redirected_download(veo: FakeVeo) -> None:
    key = {"x-goog-api-key": veo.api_key}
    image = {"bytesBase64Encoded": base64.b64encode(task_fixtures.png()).decode(), "mimeType": "image/png"}
    body = {"instances": [{"prompt": "a boat", "image": image}], "parameters": {"sampleCount": 2}}
    url = f"{veo.base_url}/v1beta/models/veo-3.0-generate-001:predictLongRunning"
    name = http("POST", url, body, key).json()["name"]
    assert name.startswith("models/veo-3.0-generate-001/operations/")
    op_url = f"{veo.base_url}/v1beta/{name}?key={veo.api_key}"  # the query-string key works too
    done = poll_until(lambda: http("GET", op_url), lambda a: a.json().get("done") is True).json()
    assert done["response"]["@type"] == RESPONSE_TYPE and "error" not in done
    samples = done["response"]["generateVideoResponse"]["generatedSamples"]
    assert len(samples) == 2
    uri = samples[0]["video"]["uri"]
    assert uri.startswith(f"{veo.base_url}/v1beta/files/") and uri.endswith(":download?alt=media")
    assert get_no_redirect(uri, {})[0] == 401  # the key is required
    status, headers = get_no_redirect(uri, key)
    assert status == 302 and "/download-data/" in headers["Location"]
    file = get_bytes(headers["Location"])  # no key needed there
    assert file.headers["content-type"] == "video/mp4" and task_fixtures.sniff(file.body) == "mp4"
    assert decode_video(file.body).audio_seconds > 0  # veo-3 generates audio
    assert [c.status for c in veo.downloads()] == [401, 302, 200]


def test_veo_fail_filtered_auth_and_reject(veo: FakeVeo) -> None:
    key = {"x-goog-api-key": veo.api_key}
    url = f"{veo.base_url}/v1beta/models/veo-2.0-generate-001:predictLongRunning"
    body = {"instances": [{"prompt": "a storm"}]}
    for script in ("fail", "filtered"):
        veo.reset(script=script)
        name = http("POST", url, body, key).json()["name"]
        op = poll_until(
            partial(http, "GET", f"{veo.base_url}/v1beta/{name}", headers=key),
            lambda a: bool(a.json().get("done")),
        )
        done = op.json()
        if script == "fail":
            assert done["error"]["status"] == "INTERNAL" and "response" not in done
        else:
            result = done["response"]["generateVideoResponse"]
            assert result["raiMediaFilteredCount"] == 1 and "generatedSamples" not in result
    assert [veo.job(j).served[-1] for j in veo.job_ids()] == [FAILED, "filtered"]

    refused = http("POST", url, body, {"x-goog-api-key": "wrong"})
    assert refused.status == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    veo.reset(google_key_errors=True)
    assert (
        http("POST", url, body, {"x-goog-api-key": "wrong"}).json()["error"]["status"] == "INVALID_ARGUMENT"
    )
    assert http("POST", url, body).status == 403
    veo.reset(submit_reject=True)
    rejected = http("POST", url, body, key)
    assert rejected.status == 400 and rejected.json()["error"] == {
        "code": 400,
        "message": "The request was rejected (fake).",
        "status": "INVALID_ARGUMENT",
    }
    missing = http("GET", f"{veo.base_url}/v1beta/models/veo-2.0-generate-001/operations/nope", headers=key)
    assert missing.status == 404 and missing.json()["error"]["status"] == "NOT_FOUND"
