"""Permissions follow what a call produces, against the real server: a key limited to `text`
gets no images or audio through the text paths (Gemini `responseModalities` / `speechConfig`
in every spelling, on every path variant; OpenAI-format chat `modalities` / `audio`), Veo
needs `video`, and a key of the output's family is served there."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

IMAGE_PATHS = [
    "/v1beta/models/sandbox-image:generateContent",
    "/v1beta/models/sandbox-image:streamGenerateContent?alt=sse",
    "/v1/models/sandbox-image:generateContent",
    "/v1/models/sandbox-image:streamGenerateContent?alt=sse",
]
CONTENTS = [{"role": "user", "parts": [{"text": "a lighthouse"}]}]


def _gemini(gw: ServedGateway, key: str, path: str, body: dict[str, Any]) -> HTTPResult:
    return http("POST", gw.base_url + path, body, {"x-goog-api-key": key})


def _refused_in_gemini_shape(res: HTTPResult) -> None:
    assert res.status == 403, res.body
    error = res.json()["error"]
    assert error["status"] == "PERMISSION_DENIED" and error["code"] == 403
    assert "image" in error["message"] or "audio" in error["message"]


@pytest.mark.parametrize("path", IMAGE_PATHS)
@pytest.mark.parametrize(
    "config",
    [
        {"generationConfig": {"responseModalities": ["IMAGE"]}},
        {"generationConfig": {"responseModalities": ["TEXT", "IMAGE"]}},
        {"generation_config": {"response_modalities": ["image"]}},
        {"generationConfig": {"responseModalities": [2]}},  # the proto enum's number
        {"generationConfig": {"responseModalities": "IMAGE"}},
        # A harmless camelCase config must not hide the snake_case one Google also reads.
        {
            "generationConfig": {"responseModalities": ["TEXT"]},
            "generation_config": {"response_modalities": ["IMAGE"]},
        },
    ],
)
def test_text_key_gets_no_image_output(
    sandbox_gateway: ServedGateway, path: str, config: dict[str, Any]
) -> None:
    key = sandbox_gateway.create_key(families=["text"])
    _refused_in_gemini_shape(_gemini(sandbox_gateway, key, path, {"contents": CONTENTS, **config}))


def test_text_key_same_as_images_endpoint(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["text"])
    res = http(
        "POST",
        sandbox_gateway.base_url + "/v1/images/generations",
        {"model": "sandbox-image", "prompt": "a lighthouse"},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 403 and res.json()["error"]["code"] == "family_not_allowed"


def test_audio_output_needs_audio(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["text"])
    for config in (
        {"generationConfig": {"responseModalities": ["AUDIO"]}},
        {
            "generationConfig": {
                "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}
            }
        },
    ):
        path = "/v1beta/models/sandbox-chat:generateContent"
        _refused_in_gemini_shape(_gemini(sandbox_gateway, key, path, {"contents": CONTENTS, **config}))
    chat = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hi"}]}
    for extra in (
        {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
        {"audio": {"voice": "alloy", "format": "wav"}},
        {"modalities": ["image", "text"]},
    ):
        res = http(
            "POST", sandbox_gateway.base_url + "/v1/chat/completions", {**chat, **extra},
            {"Authorization": f"Bearer {key}"},
        )  # fmt: skip
        assert res.status == 403, res.body
        assert res.json()["error"]["code"] == "family_not_allowed"


def test_unknown_modality_is_refused_not_guessed(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["text"])
    res = _gemini(
        sandbox_gateway,
        key,
        "/v1beta/models/sandbox-chat:generateContent",
        {"contents": CONTENTS, "generationConfig": {"responseModalities": ["HOLOGRAM"]}},
    )
    assert res.status == 400 and res.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_text_key_keeps_text(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["text"])
    for path in ("/v1beta/models/sandbox-chat:generateContent", "/v1/models/sandbox-chat:generateContent"):
        for config in ({}, {"generationConfig": {"responseModalities": ["TEXT"]}}):
            res = _gemini(sandbox_gateway, key, path, {"contents": CONTENTS, **config})
            assert res.status == 200, res.body
    chat = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hi"}], "modalities": ["text"]}
    res = http(
        "POST", sandbox_gateway.base_url + "/v1/chat/completions", chat, {"Authorization": f"Bearer {key}"}
    )
    assert res.status == 200, res.body


def test_image_key_gets_image_output_but_not_text(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["image"])
    body = {"contents": CONTENTS, "generationConfig": {"responseModalities": ["TEXT", "IMAGE"]}}
    res = _gemini(sandbox_gateway, key, "/v1beta/models/sandbox-image:generateContent", body)
    assert res.status == 200, res.body
    parts = res.json()["candidates"][0]["content"]["parts"]
    image = next(p["inlineData"] for p in parts if "inlineData" in p)
    assert base64.b64decode(image["data"]).startswith(b"\x89PNG")
    res = _gemini(sandbox_gateway, key, "/v1beta/models/sandbox-chat:generateContent", {"contents": CONTENTS})
    assert res.status == 403 and res.json()["error"]["status"] == "PERMISSION_DENIED"


def test_model_of_another_family_needs_it(sandbox_gateway: ServedGateway) -> None:
    """An image model reached through a text path still needs `image`."""
    key = sandbox_gateway.create_key(families=["text"])
    res = _gemini(
        sandbox_gateway, key, "/v1beta/models/sandbox-image:generateContent", {"contents": CONTENTS}
    )
    _refused_in_gemini_shape(res)
    chat = {"model": "sandbox-image", "messages": [{"role": "user", "content": "hi"}]}
    res = http(
        "POST", sandbox_gateway.base_url + "/v1/chat/completions", chat, {"Authorization": f"Bearer {key}"}
    )
    assert res.status == 403 and res.json()["error"]["code"] == "family_not_allowed"


def test_veo_needs_video(sandbox_gateway: ServedGateway) -> None:
    body = {"instances": [{"prompt": "a paper boat"}], "parameters": {"durationSeconds": 1}}
    for version in ("v1beta", "v1"):
        path = f"/{version}/models/veo-3.0-generate-001:predictLongRunning"
        for families in (["text"], ["image"]):
            res = _gemini(sandbox_gateway, sandbox_gateway.create_key(families=families), path, body)
            assert res.status == 403 and res.json()["error"]["status"] == "PERMISSION_DENIED", res.body
    res = _gemini(
        sandbox_gateway, sandbox_gateway.create_key(families=["video"]),
        "/v1beta/models/veo-3.0-generate-001:predictLongRunning", body,
    )  # fmt: skip
    assert res.status == 200 and res.json()["name"].startswith("models/veo-3.0-generate-001/operations/")
