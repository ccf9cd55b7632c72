"""`/media/{name}` and `/media/tasks/{task_id}/{index}/{variant}` against the real server: an
overlong or odd name is a 404 that is never logged in full, files are typed by their content
(`nosniff`; a content that is not what its name claims goes out as an attachment of type
`application/octet-stream`), `HEAD` answers the same headers with no body, and media names are
shortened in the access log (they are capabilities)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_openai_videos import FakeOpenAIVideos
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway
from tests.support.video import wait_for

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = {"sandbox": {"enabled": True, "task_seconds": 1}, "tasks": {"poll_interval": 0.2}}
    with ServedGateway(tmp_path_factory.mktemp("media-serving"), config=config) as gateway:
        yield gateway


def _image_url(gw: ServedGateway) -> str:
    key = gw.create_key()
    res = http(
        "POST",
        gw.base_url + "/v1/images/generations",
        {"model": "sandbox-image", "prompt": "a lighthouse", "size": "256x256", "response_format": "url"},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 200, res.body
    return str(res.json()["data"][0]["url"])


def _head(url: str) -> HTTPResult:
    return http("HEAD", url)


def test_an_overlong_name_is_404_and_never_logged_in_full(gw: ServedGateway) -> None:
    name = "a" * 5000 + ".png"
    for method in ("GET", "HEAD"):
        res = http(method, gw.base_url + "/media/" + name)
        assert res.status == 404, res.status
    for odd in ("x" * 129 + ".png", "abc.html", "abc", ".png", "abc.png.png", "abc.toolongext"):
        assert http("GET", gw.base_url + "/media/" + odd).status == 404, odd
    log = gw.log()
    assert "a" * 300 not in log and "unhandled error" not in log and "Traceback" not in log


def test_stored_media_typed_by_content_with_nosniff_and_head(gw: ServedGateway) -> None:
    url = _image_url(gw)
    got = http("GET", url)
    assert got.status == 200 and got.body.startswith(PNG)
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert "content-disposition" not in got.headers
    head = _head(url)
    assert head.status == 200 and head.body == b""
    for name in ("content-type", "content-length", "x-content-type-options", "cache-control"):
        assert head.headers[name] == got.headers[name], name
    assert int(head.headers["content-length"]) == len(got.body)
    # The access line keeps only the start of the name: a media link is a capability.
    name = url.rsplit("/", 1)[1]
    assert f"GET /media/{name[:8]}…" in gw.log() and name not in gw.log()


def test_content_that_is_not_its_claimed_type_is_an_attachment(gw: ServedGateway) -> None:
    media = gw.workdir / "data" / "media"
    media.mkdir(parents=True, exist_ok=True)
    (media / "planted-0123456789abcdef.png").write_bytes(b"<html><script>alert(1)</script></html>")
    (media / "planted-0123456789abcdef.txt").write_bytes(b"\xff\xfe\x00<html>")
    for name in ("planted-0123456789abcdef.png", "planted-0123456789abcdef.txt"):
        for method in ("GET", "HEAD"):
            res = http(method, gw.base_url + "/media/" + name)
            assert res.status == 200
            assert res.headers["content-type"] == "application/octet-stream", name
            assert res.headers["content-disposition"] == "attachment"
            assert res.headers["x-content-type-options"] == "nosniff"
    avatar = http("HEAD", gw.base_url + "/media/avatar.png")  # the built-in music avatar
    assert avatar.status == 200 and avatar.body == b""
    assert avatar.headers["x-content-type-options"] == "nosniff"
    assert avatar.headers["content-type"] == "image/png"


def test_task_files_get_and_head(gw: ServedGateway) -> None:
    key = gw.create_key()
    auth = {"Authorization": f"Bearer {key}"}
    res = http(
        "POST",
        gw.base_url + "/v1/video/generations",
        {"model": "sandbox-video", "prompt": "a red kite", "duration": 1, "width": 160, "height": 120},
        auth,
    )
    assert res.status == 200, res.body
    task_id = res.json()["task_id"]

    final = wait_for(
        lambda: dict(http("GET", gw.base_url + f"/v1/video/generations/{task_id}", headers=auth).json()),
        lambda got: got["status"] in ("completed", "failed"),
    )
    assert final["status"] == "completed", final
    url = gw.base_url + f"/media/tasks/{task_id}/0/video"
    got = http("GET", url)
    assert got.status == 200 and got.body[4:8] == b"ftyp"
    assert got.headers["content-type"] == "video/mp4" and got.headers["x-content-type-options"] == "nosniff"
    head = _head(url)
    assert head.status == 200 and head.body == b""
    assert head.headers["content-type"] == "video/mp4"
    assert int(head.headers["content-length"]) == len(got.body)
    assert _head(gw.base_url + f"/media/tasks/{task_id}/7/video").status == 404
    assert f"/media/tasks/{task_id[:8]}…/0/video" in gw.log()


def test_private_upstream_file_head(tmp_path: Path) -> None:
    with FakeOpenAIVideos() as sora:
        config: dict[str, Any] = {
            "providers": [
                {"name": "sora", "protocol": "openai", "base_url": sora.base_url, "api_key": sora.api_key}
            ],
            "models": [{"name": "sora-2", "routes": [{"provider": "sora"}]}],
            "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
        }
        with ServedGateway(tmp_path, config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                video = client.videos.create_and_poll(prompt="a harbour", model="sora-2", seconds="4")
            assert video.status == "completed"
            url = gw.base_url + f"/media/tasks/{video.id}/0/thumbnail"
            head = _head(url)
            assert head.status == 200 and head.body == b""
            assert head.headers["content-type"] == "image/webp"
            assert head.headers["x-content-type-options"] == "nosniff"
            got = http("GET", url)
            assert got.status == 200 and got.headers["x-content-type-options"] == "nosniff"


def test_a_task_file_link_never_tells_an_unfinished_task_from_an_unknown_id(tmp_path: Path) -> None:
    """`/media/tasks/...` takes no key: an id that exists but has no file yet answers exactly
    what an id that never existed does, for every index, variant and method."""
    config = {"sandbox": {"enabled": True, "task_seconds": 120}}  # stays unfinished throughout
    with ServedGateway(tmp_path, config=config) as gw:
        auth = {"Authorization": f"Bearer {gw.create_key()}"}
        body = {"model": "sandbox-video", "prompt": "a red kite", "duration": 1, "width": 160, "height": 120}
        res = http("POST", gw.base_url + "/v1/video/generations", body, auth)
        assert res.status == 200, res.body
        pending = res.json()["task_id"]
        unknown = str(uuid.uuid4())
        for tail in (
            "0/video",
            "0/thumbnail",
            "7/spritesheet",
            "%C2%B2/video",
            "99999999999/video",
            "-1/video",
        ):
            answers = {}
            for task_id in (pending, unknown):
                got = http("GET", gw.base_url + f"/media/tasks/{task_id}/{tail}")
                head = _head(gw.base_url + f"/media/tasks/{task_id}/{tail}")
                answers[task_id] = (got.status, got.json(), head.status, head.headers["content-type"])
            assert answers[pending] == answers[unknown], (tail, answers)
            no_file = {"message": "No such file.", "code": "file_not_found"}
            assert answers[unknown][:2] == (404, no_file), answers
        for task_id in (pending, unknown):  # a variant that does not exist is a 400 for any id
            assert http("GET", gw.base_url + f"/media/tasks/{task_id}/0/poster").status == 400
        status = http("GET", gw.base_url + f"/v1/video/generations/{pending}", headers=auth).json()["status"]
        assert status not in ("completed", "failed"), "the task was unfinished throughout"
        assert "Traceback" not in gw.log()
