"""The rules of an OpenAI image call on a Gemini image model (`translate/gemini_images.py`):
sizes to aspect ratios, the request, the images and tokens read back, refusals told apart."""

from __future__ import annotations

import base64

import pytest

from unigate.errors import InvalidRequest, UpstreamRejected
from unigate.translate.gemini_images import InputImage, aspect_ratio, drawn, image_request, unhonoured

PNG = b"\x89PNG\r\n\x1a\nrest"


@pytest.mark.parametrize(
    ("size", "ratio"),
    [
        ("1024x1024", "1:1"),
        ("1536x1024", "3:2"),
        ("1024x1536", "2:3"),
        ("1792x1024", "16:9"),
        ("1024x1792", "9:16"),
        ("1280x960", "4:3"),
        ("960x1280", "3:4"),
        ("2520x1080", "21:9"),
        ("1100x1000", "1:1"),
        ("auto", None),
        (None, None),
        ("", None),
    ],
)
def test_size_to_nearest_aspect_ratio(size: str | None, ratio: str | None) -> None:
    assert aspect_ratio(size) == ratio


@pytest.mark.parametrize("size", ["00x1024", "1024x0", "big"])
def test_size_without_a_ratio_is_refused(size: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        aspect_ratio(size)
    assert refused.value.param == "size"


def test_request_puts_the_images_before_the_prompt() -> None:
    body = image_request({"prompt": "blue", "size": "1536x1024"}, [InputImage("image/png", PNG)])
    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
                    {"text": "blue"},
                ],
            }
        ],
        "generationConfig": {"responseModalities": ["IMAGE"], "imageConfig": {"aspectRatio": "3:2"}},
    }


def test_unhonoured_names_every_other_field_set() -> None:
    payload = {
        "prompt": "x",
        "n": 2,
        "quality": "high",
        "style": "",
        "user": None,
        "complexity": 3,
        "stream": False,
    }
    assert unhonoured(payload, ["image", "mask", "markup"]) == ["complexity", "markup", "mask", "quality"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _image_part(data: bytes, snake: bool = False) -> dict[str, object]:
    key, mime = ("inline_data", "mime_type") if snake else ("inlineData", "mimeType")
    encoded = (
        base64.urlsafe_b64encode(data).decode().rstrip("=") if snake else base64.b64encode(data).decode()
    )
    return {key: {mime: "image/png", "data": encoded}}


def test_drawn_reads_images_text_and_tokens() -> None:
    answer = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "thinking", "thought": True},
                        {"text": "Here it is."},
                        _image_part(PNG),
                        _image_part(b"second", snake=True),
                    ]
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 300,
            "candidatesTokenCount": 1290,
            "thoughtsTokenCount": 40,
            "promptTokensDetails": [
                {"modality": "TEXT", "tokenCount": 42},
                {"modality": "IMAGE", "tokenCount": 258},
            ],
        },
    }
    got = drawn(answer)
    # Passed on as standard, padded base64 (the second came URL-safe and unpadded).
    assert got.images == [
        ("image/png", base64.b64encode(PNG).decode()),
        ("image/png", base64.b64encode(b"second").decode()),
    ]
    assert got.text == "Here it is."
    assert (got.prompt_tokens, got.prompt_image_tokens, got.output_tokens) == (300, 258, 1330)


@pytest.mark.parametrize(
    "answer",
    [
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}},
        {"candidates": [{"finishReason": "IMAGE_SAFETY"}]},
        {"candidates": [{"content": {"parts": [{"text": "no"}]}, "finishReason": "SAFETY"}]},
    ],
)
def test_safety_stop_is_the_clients_400(answer: dict[str, object]) -> None:
    with pytest.raises(UpstreamRejected) as refused:
        drawn(answer)
    assert refused.value.status == 400 and refused.value.code == "moderation_blocked"


@pytest.mark.parametrize(
    "answer",
    [
        {"candidates": [{"content": {"parts": [{"text": "words"}]}, "finishReason": "NO_IMAGE"}]},
        {"candidates": []},
        [],
        {"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/wav", "data": "AA=="}}]}}]},
    ],
)
def test_no_image_otherwise_is_empty_not_refused(answer: object) -> None:
    assert drawn(answer).images == []
