"""`POST /v1/images/edits` with a JSON body (`images: [{image_url}]`, `mask`), in process: data
URLs and http(s) URLs read through the SSRF guard, edited exactly as the same multipart edit,
relayed to an OpenAI upstream as multipart; `file_id` and malformed references are clear 400s;
the multipart form keeps working."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.in_process import InProcessGateway
from tests.support.media_fixtures import image_info, make_image, make_mask
from tests.support.video import sandbox_config

Json = dict[str, Any]


def _data_url(data: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64," + base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def media() -> Iterator[FakeOpenAIMedia]:
    with FakeOpenAIMedia() as fake:
        yield fake


def _config(media: FakeOpenAIMedia, allow_private: bool) -> Json:
    config = sandbox_config(
        # pragma: allowlist nextline secret
        providers=[{"name": "up", "protocol": "openai", "base_url": media.base_url, "api_key": "sk-up"}],
        models=[{"name": "painter", "routes": [{"provider": "up", "model": "gpt-image-1"}]}],
    )
    config["tasks"] = {"allow_private_webhooks": allow_private}  # the fake serves on 127.0.0.1
    return config


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, media: FakeOpenAIMedia) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("edits"), _config(media, allow_private=True)) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def key(gw: InProcessGateway) -> str:
    return gw.create_key()


def _edit(gw: InProcessGateway, key: str, body: Json, status: int = 200) -> Json:
    res = gw.request("POST", "/v1/images/edits", key, json=body)
    assert res.status_code == status, res.text
    return dict(res.json())


def _image(answer: Json, i: int = 0) -> bytes:
    return base64.b64decode(answer["data"][i]["b64_json"])


def test_a_json_edit_is_the_multipart_edit_of_the_same_images(gw: InProcessGateway, key: str) -> None:
    first, second, mask = make_image(96, 96), make_image(64, 64, color=(10, 200, 10)), make_mask(96, 96)
    body = {"model": "sandbox-image", "prompt": "make it blue", "n": 2, "output_format": "webp"}
    as_json = _edit(
        gw, key, {**body, "images": [{"image_url": _data_url(first)}, {"image_url": _data_url(second)}],
                  "mask": {"image_url": _data_url(mask)}},
    )  # fmt: skip
    files = [
        ("image[]", ("a.png", first, "image/png")),
        ("image[]", ("b.png", second, "image/png")),
        ("mask", ("m.png", mask, "image/png")),
    ]
    form = {k: str(v) for k, v in body.items()}
    multipart = gw.request("POST", "/v1/images/edits", key, files=files, data=form)
    assert multipart.status_code == 200, multipart.text
    assert len(as_json["data"]) == 2 and image_info(_image(as_json)) == ("webp", 96, 96)
    assert [_image(as_json, i) for i in (0, 1)] == [_image(multipart.json(), i) for i in (0, 1)]
    assert as_json["usage"]["input_tokens_details"]["image_tokens"] > 0


def test_an_http_url_is_fetched_through_the_guard(
    gw: InProcessGateway, key: str, media: FakeOpenAIMedia, tmp_path: Path
) -> None:
    url = media.serve_file("source.jpg", "image/jpeg", make_image(80, 60, "jpeg"))
    answer = _edit(gw, key, {"model": "sandbox-image", "prompt": "sepia", "images": [{"image_url": url}]})
    assert image_info(_image(answer)) == ("png", 80, 60) and "source.jpg" in media.file_gets
    # Without the allowance for private addresses, the same URL is refused before any fetch.
    media.file_gets.clear()
    with InProcessGateway(tmp_path, _config(media, allow_private=False)) as strict:
        refused = _edit(
            strict,
            strict.create_key(),
            {"model": "sandbox-image", "prompt": "sepia", "images": [{"image_url": url}]},
            400,
        )
    assert refused["error"]["code"] == "url_refused" and refused["error"]["param"] == "images[0].image_url"
    assert media.file_gets == []


def test_a_json_edit_reaches_an_openai_upstream_as_multipart(
    gw: InProcessGateway, key: str, media: FakeOpenAIMedia
) -> None:
    source, mask = make_image(64, 64), make_mask(64, 64)
    body = {"model": "painter", "prompt": "a hat", "images": [{"image_url": _data_url(source)}] * 2,
            "mask": {"image_url": _data_url(mask)}, "n": 1, "quality": "high"}  # fmt: skip
    answer = _edit(gw, key, body)
    assert answer["usage"]["input_tokens_details"]["image_tokens"] > 0  # the upstream's own answer
    sent = media.received[-1]
    assert sent.headers["content-type"].startswith("multipart/form-data")
    assert [f[2] for f in sent.files["image[]"]] == [source, source]
    assert sent.files["mask"][0][2] == mask
    assert sent.fields["model"] == ["gpt-image-1"] and sent.fields["prompt"] == ["a hat"]
    assert sent.fields["n"] == ["1"] and sent.fields["quality"] == ["high"]


@pytest.mark.parametrize(
    ("images", "param", "code"),
    [
        ([{"file_id": "file-abc123"}], "images[0].file_id", "unsupported_parameter"),
        ([{"image_url": "x", "file_id": "file-abc123"}], "images[0]", "invalid_value"),
        ([{"url": "data:image/png;base64,AAAA"}], "images[0]", "unknown_parameter"),
        ([{}], "images[0]", "invalid_value"),
        (["data:image/png;base64,AAAA"], "images[0]", "invalid_type"),
        ([], "images", "invalid_value"),
        (None, "images", "missing_required_parameter"),
        ([{"image_url": "data:image/png;base64,bm90IGFuIGltYWdl"}], "images[0]", "invalid_image_format"),
        ([{"image_url": "data:image/png,notbase64"}], "images[0].image_url", "invalid_value"),
        ([{"image_url": "ftp://example.com/a.png"}], "images[0].image_url", "url_refused"),
    ],
)
def test_bad_references_are_clear_400s(
    gw: InProcessGateway, key: str, images: Any, param: str, code: str
) -> None:
    body: Json = {"model": "sandbox-image", "prompt": "x"}
    if images is not None:
        body["images"] = images
    error = _edit(gw, key, body, 400)["error"]
    assert (error["param"], error["code"]) == (param, code), error
    if code == "unsupported_parameter":
        assert "image_url" in error["message"] and "multipart" in error["message"]


def test_json_fields_are_checked_as_for_generations(gw: InProcessGateway, key: str) -> None:
    image = [{"image_url": _data_url(make_image(64, 64))}]
    for field, value in (("n", 11), ("quality", 5), ("size", "huge"), ("output_format", "gif"), ("user", {})):
        body = {"model": "sandbox-image", "prompt": "x", "images": image, field: value}
        assert _edit(gw, key, body, 400)["error"]["param"] == field
    body = {"model": "sandbox-image", "prompt": "x", "images": image, "mask": {"file_id": "f"}}
    mask = _edit(gw, key, body, 400)
    assert mask["error"]["param"] == "mask.file_id"
