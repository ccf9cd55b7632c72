"""A Gemini image call as an OpenAI image call (`translate/gemini_images_inbound.py`): the
prompt and pictures it takes, sizes and counts, what it names, and OpenAI's answer shown as
Gemini's."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from unigate.errors import InvalidRequest
from unigate.translate.gemini_images_inbound import Drawing, gemini_answer, image_ask, openai_images

PNG = b"\x89PNG\r\n\x1a\n-picture-"


def _user(*parts: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _image(data: bytes, urlsafe: bool = False) -> dict[str, Any]:
    encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode().rstrip("=")
    return {"inlineData": {"mimeType": "image/png", "data": encoded}}


def test_a_prompt_alone_is_a_generation() -> None:
    ask = image_ask({"contents": [_user({"text": "a fox"}, {"text": "in snow"})]})
    assert ask.payload == {"prompt": "a fox\nin snow"} and ask.images == [] and ask.dropped == []


def test_pictures_of_the_last_turn_in_either_base64_alphabet() -> None:
    ask = image_ask({"contents": [_user(_image(PNG), _image(b"\xfb\xff", urlsafe=True), {"text": "blue"})]})
    assert ask.images == [PNG, b"\xfb\xff"]


def test_a_chat_refines_its_latest_picture_and_names_the_earlier_words() -> None:
    contents = [
        _user({"text": "a cat"}),
        _user(_image(b"first"), _image(b"second"), role="model"),
        _user({"text": "make it blue"}),
    ]
    ask = image_ask({"contents": contents})
    assert ask.images == [b"second"] and ask.payload == {"prompt": "make it blue"}
    assert ask.dropped == ["contents"]


@pytest.mark.parametrize(
    ("ratio", "size", "named"),
    [("1:1", "1024x1024", False), ("3:2", "1536x1024", False), ("2:3", "1024x1536", False),
     ("16:9", "1536x1024", True), ("9:16", "1024x1536", True), ("4:3", "1536x1024", True)],
)  # fmt: skip
def test_aspect_ratio_to_the_nearest_size(ratio: str, size: str, named: bool) -> None:
    config = {"responseModalities": ["IMAGE"], "imageConfig": {"aspectRatio": ratio}, "candidateCount": 3}
    ask = image_ask({"contents": [_user({"text": "x"})], "generationConfig": config})
    assert ask.payload == {"prompt": "x", "size": size, "n": 3}
    assert ("generationConfig.imageConfig.aspectRatio" in ask.dropped) is named


def test_what_an_image_call_cannot_carry_is_named() -> None:
    body = {
        "contents": [_user({"text": "x"}, {"fileData": {"fileUri": "files/abc", "mimeType": "image/png"}})],
        "tools": [{"googleSearch": {}}],
        "system_instruction": {"parts": [{"text": "s"}]},
        "generation_config": {
            "temperature": 1,
            "image_config": {"imageSize": "2K"},
            "response_modalities": ["IMAGE"],
        },
    }
    assert image_ask(body).dropped == [
        "contents.parts.fileData",
        "system_instruction",
        "tools",
        "generationConfig.temperature",
        "generationConfig.imageConfig.imageSize",
    ]


TEXT = _user({"text": "x"})
NOT_BASE64 = _user({"inlineData": {"mimeType": "image/png", "data": "@@"}}, {"text": "x"})


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"contents": []}, "contents"),
        ({"contents": [_user(_image(PNG))]}, "contents"),
        ({"contents": [NOT_BASE64]}, "contents[0].parts[0].inlineData.data"),
        ({"contents": [TEXT], "generationConfig": {"candidateCount": 11}}, "generationConfig.candidateCount"),
        (
            {"contents": [TEXT], "generationConfig": {"imageConfig": {"aspectRatio": "wide"}}},
            "generationConfig.imageConfig.aspectRatio",
        ),
    ],
)
def test_refusals_name_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        image_ask(body)
    assert refused.value.param == param


def test_openai_answer_as_gemini() -> None:
    usage = {"input_tokens": 12, "output_tokens": 272}
    images, got = openai_images(
        {"data": [{"b64_json": "AAAA"}, {"url": "https://x/y.png"}], "output_format": "webp", "usage": usage}
    )
    assert images == [Drawing("image/webp", b64="AAAA"), Drawing("image/webp", url="https://x/y.png")]
    answer = gemini_answer([images[0], Drawing("image/webp", b64="BBBB")], got, "m")
    assert [c["content"]["parts"][0]["inlineData"]["data"] for c in answer["candidates"]] == ["AAAA", "BBBB"]
    assert [c["index"] for c in answer["candidates"]] == [0, 1]
    assert answer["usageMetadata"] == {
        "promptTokenCount": 12,
        "candidatesTokenCount": 272,
        "totalTokenCount": 284,
    }
