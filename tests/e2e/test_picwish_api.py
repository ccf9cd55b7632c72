"""PicWish's visual and document tools through the sandbox, against the real server process:
tasks move 0 → 4 → 1 and their files download and decode with Pillow (a segmentation cutout
with transparent corners and an opaque subject, an inpaint that changes only the masked
area, an upscale of exactly the factor, OCR that reads the words the test drew), `sync=1`
answers the finished task, callbacks arrive signed with the query's body, ids stay within
their tool and key, and bad input is a 4xx in PicWish's shape."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont

from tests.support.media_fixtures import make_image
from tests.support.net import HTTPResult, http
from tests.support.readme import code_blocks, section, shell_commands
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from tests.support.task_client import FileServer, Polled, TaskClient, multipart, poll_until
from tests.support.video import sandbox_config

PRICE = 0.2
BACKGROUND = (70, 130, 180)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = sandbox_config(2.0)
    config["tasks"] = {**config["tasks"], "poll_interval": 0.2}
    for model in config["models"]:
        if model["name"] == "picwish/segmentation":
            model["price_per_call"] = PRICE
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(Path(tmp_path_factory.mktemp("picwish")), config=config, env=env) as g:
        yield g


@pytest.fixture(scope="module")
def key_record(gw: ServedGateway) -> dict[str, Any]:
    return gw.create_key_record(name="picwish")


@pytest.fixture(scope="module")
def client(gw: ServedGateway, key_record: dict[str, Any]) -> TaskClient:
    return TaskClient(gw.base_url, {"X-API-KEY": key_record["key"]})


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _subject() -> bytes:
    """A dark red disc on a light grey background."""
    image = Image.new("RGB", (200, 160), (230, 230, 230))
    ImageDraw.Draw(image).ellipse((55, 35, 145, 125), fill=(150, 20, 30))
    return _png(image)


def _scene() -> bytes:
    """A yellow square on a plain blue background."""
    image = Image.new("RGB", (160, 120), BACKGROUND)
    ImageDraw.Draw(image).rectangle((40, 40, 69, 69), fill=(250, 220, 0))
    return _png(image)


def _create(client: TaskClient, path: str, fields: dict[str, str], image: bytes | None = None,
            **files: tuple[str, bytes, str]) -> HTTPResult:  # fmt: skip
    if image is not None:
        files["image_file"] = ("picture.png", image, "image/png")
    body, content_type = multipart(fields, files)
    return client.call("POST", path, body, **{"Content-Type": content_type})


def _start(client: TaskClient, path: str, fields: dict[str, str], image: bytes | None = None,
           **files: tuple[str, bytes, str]) -> str:  # fmt: skip
    """Create a task; its query path."""
    res = _create(client, path, fields, image, **files)
    assert res.status == 200, res.body
    assert res.json()["status"] == 200 and res.json()["message"] == "success"
    return f"{path}/{res.json()['data']['task_id']}"


def _finish(client: TaskClient, query: str) -> Polled:
    polled = client.wait(query, lambda d: d["data"]["state"], (1, -1))
    assert polled.states[-1] in (1, -1) and set(polled.states) <= {0, 4, polled.states[-1]}, polled.states
    return polled


def _run(client: TaskClient, path: str, fields: dict[str, str], image: bytes | None = None,
         **files: tuple[str, bytes, str]) -> Polled:  # fmt: skip
    return _finish(client, _start(client, path, fields, image, **files))


def _pixel(image: Image.Image, at: tuple[int, int]) -> tuple[int, ...]:
    value = image.getpixel(at)
    assert isinstance(value, tuple), value
    return value


def _image(url: str) -> Image.Image:
    res = http("GET", url)
    assert res.status == 200, url
    return Image.open(io.BytesIO(res.body))


def test_segmentation_cuts_the_subject_out_with_real_alpha(client: TaskClient) -> None:
    polled = _run(client, "/api/tasks/visual/segmentation", {"output_type": "1"}, _subject())
    data = polled.final["data"]
    assert polled.states[-1] == 1 and 4 in polled.states
    assert set(data) == {"task_id", "state", "state_detail", "progress", "return_type", "image", "mask",
                         "created_at", "processed_at", "completed_at"}  # fmt: skip
    assert data["progress"] == 100 and data["state_detail"] == "Complete"
    assert data["created_at"] <= data["processed_at"] <= data["completed_at"]
    cutout = _image(data["image"])
    assert cutout.format == "PNG" and cutout.mode == "RGBA" and cutout.size == (200, 160)
    for corner in ((0, 0), (199, 0), (0, 159), (199, 159)):
        assert _pixel(cutout, corner)[3] == 0, corner
    assert _pixel(cutout, (100, 80)) == (150, 20, 30, 255)
    mask = _image(data["mask"])
    assert mask.size == (200, 160) and mask.convert("L").getpixel((100, 80)) == 255


def test_inpaint_changes_only_the_masked_area(client: TaskClient) -> None:
    rectangles = '[{"x": 36, "y": 36, "width": 38, "height": 38}]'
    mask = Image.new("L", (160, 120), 0)
    ImageDraw.Draw(mask).rectangle((36, 36, 73, 73), fill=255)
    by_rectangles = _start(client, "/api/tasks/visual/inpaint", {"rectangles": rectangles}, _scene())
    by_mask = _start(client, "/api/tasks/visual/inpaint", {}, _scene(),
                     mask_file=("mask.png", _png(mask), "image/png"))  # fmt: skip
    with FileServer(files={"scene.png": _scene(), "mask.png": _png(mask)}) as files:
        urls = {"image_url": files.url("scene.png"), "mask_url": files.url("mask.png")}
        by_urls = _start(client, "/api/tasks/visual/inpaint", urls)  # fetched at submit
    source = Image.open(io.BytesIO(_scene())).convert("RGB")
    for polled in (_finish(client, by_rectangles), _finish(client, by_mask), _finish(client, by_urls)):
        assert polled.states[-1] == 1, polled.final
        result = _image(polled.final["data"]["image"]).convert("RGB")
        assert result.size == source.size
        outside = ImageChops.difference(result, source)
        outside.paste((0, 0, 0), (36, 36, 74, 74))
        assert outside.getbbox() is None  # every pixel outside the area is untouched
        assert max(abs(a - b) for a, b in zip(_pixel(result, (55, 55)), BACKGROUND, strict=True)) < 30


def test_scale_enlarges_exactly_by_the_factor(client: TaskClient) -> None:
    four = _start(
        client, "/api/tasks/visual/scale", {"scale_factor": "4", "type": "clean"}, make_image(50, 40)
    )
    default = _start(client, "/api/tasks/visual/scale", {}, make_image(50, 40, "jpeg"))
    assert _image(_finish(client, four).final["data"]["image"]).size == (200, 160)
    doubled = _image(_finish(client, default).final["data"]["image"])
    assert doubled.size == (100, 80) and doubled.format == "JPEG"  # the input's format


def _words_image() -> bytes:
    image = Image.new("RGB", (900, 200), "white")
    font = ImageFont.load_default(size=64)
    ImageDraw.Draw(image).text((30, 60), "QUICK BROWN FOX", fill="black", font=font)
    return _png(image)


def test_ocr_with_sync_answers_the_finished_task_with_the_words(client: TaskClient) -> None:
    pdf = _start(client, "/api/tasks/document/ocr", {"format": "pdf"}, _words_image())
    res = _create(client, "/api/tasks/document/ocr", {"sync": "1", "language": "English"}, _words_image())
    assert res.status == 200, res.body
    data = res.json()["data"]
    assert data["state"] == 1 and data["progress"] == 100 and "image" not in data
    text = http("GET", data["file"]).body.decode()
    assert {"QUICK", "BROWN", "FOX"} <= set(text.upper().split()), text
    assert http("GET", _finish(client, pdf).final["data"]["file"]).body.startswith(b"%PDF")


def test_image_url_sync_and_signed_callbacks(client: TaskClient, key_record: dict[str, Any]) -> None:
    with FileServer(files={"subject.png": _subject()}) as files, \
            WebhookReceiver(secret=key_record["webhook_secret"]) as receiver:  # fmt: skip
        fields = {
            "image_url": files.url("subject.png"),
            "sync": "1",
            "callback_url": receiver.url,
            "crop": "1",
        }
        res = _create(client, "/api/tasks/visual/segmentation", fields)
        assert res.status == 200, res.body
        data = res.json()["data"]
        assert data["state"] == 1 and "mask" not in data  # output_type 2 (the default): the image only
        cropped = _image(data["image"])
        assert abs(cropped.width - 91) <= 4 and abs(cropped.height - 91) <= 4  # cropped to the disc
        query = client.get_json(f"/api/tasks/visual/segmentation/{data['task_id']}")
        assert query == {"status": 200, "message": "success", "data": data}
        poll_until(lambda: {"done": [d.body["data"]["state"] for d in receiver.snapshot()]},
                   lambda seen: 1 in seen["done"], {True})  # fmt: skip
        deliveries = receiver.snapshot()
        assert deliveries and all(d.valid_signature for d in deliveries)
        assert deliveries[-1].body == query  # the callback body is the query's body


def test_an_undecodable_image_fails_the_task_and_is_refunded(gw: ServedGateway, client: TaskClient) -> None:
    broken = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200  # PNG's signature, then nothing decodable
    polled = _run(client, "/api/tasks/visual/segmentation", {}, broken)
    data = polled.final["data"]
    assert data["state"] == -1 and "image" not in data and data["state_detail"], data
    ledger = gw.admin("GET", f"/admin/tasks/{data['task_id']}").json()["ledger"]
    assert sorted((e["kind"], e["amount"]) for e in ledger) == [("refund", PRICE), ("reserve", PRICE)]


def test_a_task_is_found_only_through_its_tool_and_key(gw: ServedGateway, client: TaskClient) -> None:
    res = _create(client, "/api/tasks/visual/scale", {}, make_image(20, 20))
    task_id = res.json()["data"]["task_id"]
    key = client.headers["X-API-KEY"]
    assert client.call("GET", f"/api/tasks/visual/scale/{task_id}").status == 200
    stranger = TaskClient(gw.base_url, {"X-API-KEY": gw.create_key()})
    for who, path in ((client, f"/api/tasks/visual/inpaint/{task_id}"),
                      (client, f"/api/tasks/document/ocr/{task_id}"),
                      (client, f"/api/tasks/visual/colorization/{task_id}"),
                      (stranger, f"/api/tasks/visual/scale/{task_id}")):  # fmt: skip
        found = who.call("GET", path)
        assert found.status == 404 and found.json() == {"status": 404, "message": found.json()["message"]}
    vidu = http(
        "GET", f"{gw.base_url}/ent/v2/tasks/{task_id}/creations", headers={"Authorization": f"Token {key}"}
    )
    assert vidu.status == 404 and vidu.json()["reason"] == "TaskNotFound"


def test_keys_by_x_api_key_or_bearer_and_the_visual_family(gw: ServedGateway, client: TaskClient) -> None:
    body, content_type = multipart(
        {"scale_factor": "1"}, {"image_file": ("a.png", make_image(8, 8), "image/png")}
    )
    url = gw.base_url + "/api/tasks/visual/scale"
    key = client.headers["X-API-KEY"]
    assert (
        http("POST", url, body, {"Authorization": f"Bearer {key}", "Content-Type": content_type}).status
        == 200
    )
    for headers, status in (({}, 401), ({"X-API-KEY": "ugk_wrong"}, 401),
                            ({"X-API-KEY": gw.create_key(families=["audio"])}, 403)):  # fmt: skip
        res = http("POST", url, body, {**headers, "Content-Type": content_type})
        assert res.status == status and res.json() == {"status": status, "message": res.json()["message"]}


def test_bad_input_is_a_4xx_in_picwishs_shape(client: TaskClient) -> None:
    png = make_image(32, 32)
    image = ("a.png", png, "image/png")
    cases: list[tuple[str, dict[str, str], dict[str, tuple[str, bytes, str]], int]] = [
        ("visual/segmentation", {}, {}, 400),  # no image
        (
            "visual/segmentation",
            {"image_url": "https://example.com/a.png"},
            {"image_file": image},
            400,
        ),  # both
        (
            "visual/segmentation",
            {},
            {"image_file": ("a.txt", b"plain text, not a picture", "text/plain")},
            400,
        ),
        ("visual/segmentation", {"image_url": "ftp://example.com/a.png"}, {}, 400),
        ("visual/segmentation", {"output_type": "5"}, {"image_file": image}, 400),
        ("visual/segmentation", {"bg_color": "blue"}, {"image_file": image}, 400),
        ("visual/segmentation", {"return_type": "2"}, {"image_file": image}, 400),
        ("visual/scale", {"scale_factor": "3"}, {"image_file": image}, 400),
        ("visual/inpaint", {}, {"image_file": image}, 400),  # neither mask nor rectangles
        ("visual/inpaint", {"rectangles": '[{"x": 1}]'}, {"image_file": image}, 400),
        ("visual/inpaint", {"rectangles": "not json"}, {"image_file": image}, 400),
        ("visual/inpaint", {"rectangles": "[]"}, {"image_file": image}, 400),
        (
            "visual/inpaint",
            {"rectangles": '[{"x":0,"y":0,"width":4,"height":4}]'},
            {"image_file": image, "mask_file": image},
            400,
        ),  # both
        ("document/ocr", {"format": "doc"}, {"image_file": image}, 400),
        ("document/ocr", {"format": "docx"}, {"image_file": image}, 400),  # the sandbox makes txt and pdf
        ("visual/colorization", {}, {"image_file": image}, 404),
        ("document/conversion", {}, {"image_file": image}, 404),
    ]
    for tool, fields, files, status in cases:
        res = _create(client, f"/api/tasks/{tool}", fields, None, **files)
        assert res.status == status, (tool, fields, res.status, res.body)
        assert res.json() == {"status": status, "message": res.json()["message"]}, res.body
    assert (
        "txt and pdf" in _create(client, "/api/tasks/document/ocr", {"format": "xlsx"}, png).json()["message"]
    )
    plain = client.call("POST", "/api/tasks/visual/scale", b"image=1", **{"Content-Type": "text/plain"})
    assert plain.status == 400 and set(plain.json()) == {"status", "message"}


def test_an_unsafe_callback_url_is_refused(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key()
    for hook in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "gopher://example.com/"):
        body, content_type = multipart(
            {"callback_url": hook}, {"image_file": ("a.png", make_image(8, 8), "image/png")}
        )
        res = http("POST", sandbox_gateway.base_url + "/api/tasks/visual/scale", body,
                   {"X-API-KEY": key, "Content-Type": content_type})  # fmt: skip
        assert res.status == 400 and "callback_url" in res.json()["message"], res.body


# --- against a PicWish upstream (the fake), every tool through one glob route ----------------


@pytest.fixture(scope="module")
def fake_picwish() -> Iterator[Any]:
    from tests.support.fake_picwish import FakePicWish

    with FakePicWish(api_key="pw-secret") as fake:
        yield fake


@pytest.fixture(scope="module")
def upstream_gw(tmp_path_factory: pytest.TempPathFactory, fake_picwish: Any) -> Iterator[ServedGateway]:
    provider = {
        "name": "pw",
        "protocol": "picwish",
        "base_url": fake_picwish.base_url,
        "api_key": "pw-secret",
    }
    config = {
        "providers": [provider],
        "models": [{"name": "picwish/*", "price_per_call": PRICE, "routes": [{"provider": "pw"}]}],
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
    }
    with ServedGateway(Path(tmp_path_factory.mktemp("picwish-upstream")), config=config) as g:
        yield g


@pytest.fixture(scope="module")
def upstream_client(upstream_gw: ServedGateway) -> TaskClient:
    return TaskClient(upstream_gw.base_url, {"X-API-KEY": upstream_gw.create_key()})


def test_tools_through_a_picwish_upstream(upstream_client: TaskClient, fake_picwish: Any) -> None:
    fake_picwish.reset()
    earlier = len(fake_picwish.submits())  # the module's other tests share the fake
    upload = _subject()
    segmented = _run(
        upstream_client, "/api/tasks/visual/segmentation", {"output_type": "1", "crop": "1"}, upload
    )
    data = segmented.final["data"]
    assert data["state"] == 1 and 4 in segmented.states
    assert data["image"].startswith(fake_picwish.root + "/files/") and data["mask"].endswith("-mask.png")
    assert _image(data["image"]).format == "PNG"
    [submit] = fake_picwish.submits()[earlier:]
    assert submit.headers["x-api-key"] == "pw-secret" and submit.files["image_file"][0].size == len(upload)
    assert submit.fields["output_type"] == ["1"] and submit.fields["crop"] == ["1"]
    res = _create(upstream_client, "/api/tasks/document/ocr", {"sync": "1", "format": "docx"}, _words_image())
    assert res.status == 200 and res.json()["data"]["state"] == 1, res.body  # the upstream makes Office files
    assert res.json()["data"]["file"].startswith(fake_picwish.root + "/files/")


def test_an_upstream_failure_is_minus_one_with_its_reason_and_refunded_once(
    upstream_gw: ServedGateway, upstream_client: TaskClient, fake_picwish: Any
) -> None:
    fake_picwish.reset(script="fail", fail_reason="The image has no subject.")
    polled = _run(upstream_client, "/api/tasks/visual/scale", {"scale_factor": "4"}, make_image(40, 40))
    data = polled.final["data"]
    assert data["state"] == -1 and "The image has no subject." in data["state_detail"] and "image" not in data
    time.sleep(0.5)  # later polls must not refund again
    ledger = upstream_gw.admin("GET", f"/admin/tasks/{data['task_id']}").json()["ledger"]
    assert sorted((e["kind"], e["amount"]) for e in ledger) == [("refund", PRICE), ("reserve", PRICE)]
    fake_picwish.reset(submit_reject=True)
    refused = _create(upstream_client, "/api/tasks/visual/scale", {}, make_image(40, 40))
    assert refused.status == 400 and set(refused.json()) == {"status", "message"}, refused.body


# The README's curl example, run as written (against this gateway's address, photo.jpg made here).
[README_CURL] = [
    command
    for block in code_blocks(section("Sound effects, lip sync and visual tools"), "sh")
    for command in shell_commands(block)
    if "/api/tasks/visual/segmentation" in command
]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
def test_the_readme_curl_example(gw: ServedGateway, client: TaskClient, tmp_path: Path) -> None:
    photo = Image.open(io.BytesIO(_subject())).convert("RGB")
    photo.save(tmp_path / "photo.jpg", "JPEG", quality=95)
    command = README_CURL.replace("http://127.0.0.1:8000", gw.base_url)
    env = {**os.environ, "KEY": client.headers["X-API-KEY"]}
    done = subprocess.run(["bash", "-c", command], capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == 200 and answer["data"]["state"] == 1, answer
    assert _image(answer["data"]["image"]).mode == "RGBA" and _image(answer["data"]["mask"]).size == (
        200,
        160,
    )
