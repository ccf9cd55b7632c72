"""OpenAI-format image calls served by a Gemini image model: the OpenAI SDK against the real
gateway, in front of a fake Gemini API that draws as Gemini's image models do (`generateContent`
with `responseModalities: ["IMAGE"]`). Sizes become aspect ratios, `n` images are `n` calls,
edits send their images as parts, `url` and `stream` answers are the gateway's own, what
Gemini cannot take is named, a safety refusal is the client's 400 and an answer without an
image falls back to the next route."""

from __future__ import annotations

import base64
import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.cross_rig import GEM_KEY, cross_rig
from tests.support.cross_rig import CrossRig as Rig
from tests.support.media_fixtures import image_info, make_image, make_mask
from tests.support.net import http
from tests.support.readme import PLACEHOLDER_KEY, PLACEHOLDER_URL, blocks

UPSTREAM_MODEL = "gemini-2.5-flash-image"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    models = [
        {"name": "nano", "routes": [{"provider": "gem", "model": UPSTREAM_MODEL}]},
        {
            "name": "nano-then-openai",
            "routes": [
                {"provider": "gem", "model": UPSTREAM_MODEL, "priority": 1},
                {"provider": "oa", "model": "gpt-image-1", "priority": 2},
            ],
        },
    ]
    with cross_rig(Path(tmp_path_factory.mktemp("gemini-images")), models) as rig:
        yield rig


def _image(b64: str | None) -> tuple[str, int, int]:
    assert b64
    return image_info(base64.b64decode(b64))


def test_generation_is_one_generate_content_call(rig: Rig) -> None:
    answer = rig.client.images.generate(model="nano", prompt="a red square")
    assert answer.data and _image(answer.data[0].b64_json) == ("png", 128, 128)
    assert answer.output_format == "png"
    assert answer.usage and (answer.usage.input_tokens, answer.usage.output_tokens) == (9, 1290)
    call, body, headers = rig.gem.received[-1]
    assert call == f"{UPSTREAM_MODEL}:generateContent?" and headers["x-goog-api-key"] == GEM_KEY
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "a red square"}]}],
        "generationConfig": {"responseModalities": ["IMAGE"]},
    }


@pytest.mark.parametrize(
    ("size", "ratio", "pixels"),
    [
        ("1024x1024", "1:1", (128, 128)),
        ("1536x1024", "3:2", (156, 104)),
        ("1024x1536", "2:3", (104, 156)),
        ("1792x1024", "16:9", (168, 96)),
        ("1024x1792", "9:16", (96, 168)),
        ("auto", None, (128, 128)),
    ],
)
def test_size_becomes_the_nearest_aspect_ratio(
    rig: Rig, size: str, ratio: str | None, pixels: tuple[int, int]
) -> None:
    answer = rig.client.images.generate(model="nano", prompt="a field", size=size)
    assert answer.data and _image(answer.data[0].b64_json)[1:] == pixels
    config = rig.gem.received[-1][1]["generationConfig"]
    assert config.get("imageConfig") == ({"aspectRatio": ratio} if ratio else None)


def test_n_images_are_n_calls(rig: Rig) -> None:
    before = len(rig.gem.received)
    answer = rig.client.images.generate(model="nano", prompt="three birds", n=3)
    assert len(answer.data or []) == 3 and len(rig.gem.received) - before == 3
    assert answer.usage and answer.usage.output_tokens == 3 * 1290


def test_url_answers_link_to_the_gateway(rig: Rig) -> None:
    answer = rig.client.images.generate(model="nano", prompt="a boat", response_format="url")
    url = (answer.data or [])[0].url
    assert url and url.startswith(rig.gw.base_url + "/media/img-")
    got = http("GET", url)
    assert got.status == 200 and image_info(got.body) == ("png", 128, 128)


def test_stream_answers_one_completed_event_per_image(rig: Rig) -> None:
    events = list(rig.client.images.generate(model="nano", prompt="a kite", n=2, stream=True))
    assert [e.type for e in events] == ["image_generation.completed"] * 2
    for event in events:
        assert event.type == "image_generation.completed"
        assert _image(event.b64_json) == ("png", 128, 128) and event.usage.output_tokens == 1290


def test_edit_sends_the_images_as_parts(rig: Rig) -> None:
    first, second = make_image(200, 100, "png"), make_image(64, 64, "webp")
    raw = rig.client.images.with_raw_response.edit(
        model="nano",
        image=[("a.png", first, "image/png"), ("b.webp", second, "image/webp")],
        mask=("m.png", make_mask(200, 100)),
        prompt="make it blue",
    )
    answer = raw.parse()
    assert answer.data and _image(answer.data[0].b64_json) == ("png", 200, 100)  # the first input's size
    assert raw.headers["x-unigate-dropped-fields"] == "mask"  # Gemini edits take no mask
    parts = rig.gem.received[-1][1]["contents"][0]["parts"]
    assert parts == [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(first).decode()}},
        {"inlineData": {"mimeType": "image/webp", "data": base64.b64encode(second).decode()}},
        {"text": "make it blue"},
    ]
    assert answer.usage and answer.usage.input_tokens_details.image_tokens == 2 * 258


def test_what_gemini_cannot_take_is_named_not_sent(rig: Rig) -> None:
    raw = rig.client.images.with_raw_response.generate(
        model="nano",
        prompt="a lamp",
        quality="high",
        style="vivid",
        background="transparent",
        output_format="jpeg",
        moderation="low",
        user="u-1",
    )
    assert raw.parse().output_format == "png"
    named = raw.headers["x-unigate-dropped-fields"]
    assert named == "background, moderation, output_format, quality, style, user"
    assert set(rig.gem.received[-1][1]) == {"contents", "generationConfig"}
    plain = rig.client.images.with_raw_response.generate(model="nano", prompt="a lamp")
    assert "x-unigate-dropped-fields" not in plain.headers


@pytest.mark.parametrize("prompt", ["a forbidden scene", "an unsafe picture"])
def test_safety_refusal_is_the_clients_400_without_fallback(rig: Rig, prompt: str) -> None:
    before = len(rig.oa.received)
    with pytest.raises(openai.BadRequestError) as refused:
        rig.client.images.generate(model="nano-then-openai", prompt=prompt)
    assert refused.value.code == "moderation_blocked" and "safety" in refused.value.message
    assert len(rig.oa.received) == before  # a refusal is not a failed route


def test_answer_without_image_falls_back_to_the_next_route(rig: Rig) -> None:
    answer = rig.client.images.generate(model="nano-then-openai", prompt="words only, please")
    assert answer.data and answer.data[0].b64_json
    assert (rig.oa.received[-1].json or {})["prompt"] == "words only, please"
    assert "route gem/gemini-2.5-flash-image failed: The upstream answered without an image" in rig.gw.log()


def test_bad_aspect_ratio_never_reaches_gemini(rig: Rig) -> None:
    before = len(rig.gem.received)
    with pytest.raises(openai.BadRequestError):
        rig.client.images.generate(model="nano", prompt="x", size="0x1024")
    assert len(rig.gem.received) == before


def test_the_docs_example(rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/images.md's example as written, on this rig (its model is `nano` here)."""
    (block,) = [
        b for b in blocks() if b.runner == "run by tests/e2e/test_gemini_images.py::test_the_docs_example"
    ]
    code = block.text.replace(PLACEHOLDER_URL, rig.gw.base_url).replace(PLACEHOLDER_KEY, rig.key)
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code.replace('"nano-banana"', '"nano"'), "<example>", "exec"), {})
    assert image_info((tmp_path / "lighthouse.png").read_bytes()) == ("png", 156, 104)  # 1536x1024: 3:2
    assert "output_tokens=1290" in printed.getvalue()
    edit = rig.gem.received[-1][1]["contents"][0]["parts"]
    assert [next(iter(p)) for p in edit] == ["inlineData", "text"] and edit[-1]["text"] == "add snow"


def test_an_edit_forms_fields_are_text(rig: Rig) -> None:
    """A form carries `n=2` and `stream=false` as text (the SDKs' edits send them so)."""
    picture = make_image(40, 20, "png")
    answer = rig.client.images.edit(model="nano", image=("a.png", picture), prompt="blue", n=2, stream=False)
    assert [_image(item.b64_json) for item in answer.data or []] == [("png", 40, 20)] * 2
