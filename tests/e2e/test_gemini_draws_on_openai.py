"""A Gemini client asking for image output from a model routed to OpenAI's image API:
google-genai against the real gateway, in front of a fake OpenAI image upstream. The call
becomes an images generation (an edit when it brings pictures, or refines a chat's latest
one), the aspect ratio the nearest gpt-image size, `candidateCount` becomes `n`, DALL·E's links
are fetched, and what an image call cannot carry is named."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.genai import errors, types

from tests.support.cross_rig import CrossRig as Rig
from tests.support.cross_rig import cross_rig
from tests.support.media_fixtures import image_info, make_image

IMAGE_ONLY = types.GenerateContentConfig(response_modalities=["IMAGE"])


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    models = [
        {"name": "gpt-image", "routes": [{"provider": "oa", "model": "gpt-image-1"}]},
        {"name": "dalle", "routes": [{"provider": "oa", "model": "dall-e-3"}]},
    ]
    # DALL·E answers with links to the fake on 127.0.0.1, which the fetch guard lets through only so.
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with cross_rig(Path(tmp_path_factory.mktemp("gemini-draws")), models, env=env) as rig:
        yield rig


def _images(response: types.GenerateContentResponse) -> list[tuple[str, int, int]]:
    found = []
    for candidate in response.candidates or []:
        for part in (candidate.content.parts if candidate.content else None) or []:
            if part.inline_data and part.inline_data.data:
                found.append(image_info(part.inline_data.data))
    return found


def test_generation_with_aspect_ratio(rig: Rig) -> None:
    config = types.GenerateContentConfig(
        response_modalities=["TEXT", "IMAGE"], image_config=types.ImageConfig(aspect_ratio="3:2")
    )
    answer = rig.genai.models.generate_content(model="gpt-image", contents="a red fox", config=config)
    assert _images(answer) == [("png", 1536, 1024)]
    assert rig.oa.received[-1].path == "/v1/images/generations"
    assert rig.oa.received[-1].json == {"model": "gpt-image-1", "prompt": "a red fox", "size": "1536x1024"}
    assert answer.usage_metadata and answer.usage_metadata.candidates_token_count == 272


def test_candidate_count_is_n(rig: Rig) -> None:
    config = types.GenerateContentConfig(response_modalities=["IMAGE"], candidate_count=2)
    answer = rig.genai.models.generate_content(model="gpt-image", contents="two moons", config=config)
    assert len(_images(answer)) == 2 and (rig.oa.received[-1].json or {})["n"] == 2


def test_a_ratio_between_sizes_is_drawn_at_the_nearest_and_named(rig: Rig) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "a wide valley"}]}],
        "systemInstruction": {"parts": [{"text": "be bold"}]},
        "generationConfig": {
            "responseModalities": ["IMAGE"],
            "imageConfig": {"aspectRatio": "16:9"},
            "temperature": 1,
        },
    }
    res = rig.generate("gpt-image", body)
    assert res.status == 200 and (rig.oa.received[-1].json or {})["size"] == "1536x1024"
    named = res.headers["x-unigate-dropped-fields"]
    assert (
        named == "generationConfig.imageConfig.aspectRatio, generationConfig.temperature, systemInstruction"
    )


def test_pictures_sent_make_an_edit(rig: Rig) -> None:
    picture = make_image(300, 200, "png")
    parts = [types.Part.from_bytes(data=picture, mime_type="image/png"), types.Part(text="make it blue")]
    contents = types.Content(role="user", parts=parts)
    answer = rig.genai.models.generate_content(model="gpt-image", contents=contents, config=IMAGE_ONLY)
    assert _images(answer) == [("png", 300, 200)]
    got = rig.oa.received[-1]
    assert got.path == "/v1/images/edits" and got.fields["prompt"] == ["make it blue"]
    assert [f[2] for f in got.files["image"]] == [picture] and got.fields["model"] == ["gpt-image-1"]


def test_a_chat_refines_its_latest_picture(rig: Rig) -> None:
    chat = rig.genai.chats.create(model="gpt-image", config=IMAGE_ONLY)
    first = chat.send_message("draw a cat")
    drawn = next(p.inline_data.data for p in first.candidates[0].content.parts if p.inline_data)  # type: ignore[index, union-attr]
    second = chat.send_message("now make it blue")
    assert _images(second) == [("png", 1024, 1024)]
    got = rig.oa.received[-1]
    assert got.path == "/v1/images/edits" and got.fields["prompt"] == ["now make it blue"]
    assert [f[2] for f in got.files["image"]] == [drawn]


def test_links_are_fetched(rig: Rig) -> None:
    before = len(rig.oa.file_gets)
    answer = rig.genai.models.generate_content(model="dalle", contents="a lighthouse", config=IMAGE_ONLY)
    assert _images(answer) == [("png", 1024, 1024)] and len(rig.oa.file_gets) == before + 1


def test_stream_is_one_event(rig: Rig) -> None:
    chunks = list(
        rig.genai.models.generate_content_stream(model="gpt-image", contents="a bird", config=IMAGE_ONLY)
    )
    assert len(chunks) == 1 and _images(chunks[0]) == [("png", 1024, 1024)]


def test_no_prompt_is_a_400_in_googles_shape(rig: Rig) -> None:
    picture = types.Content(
        role="user", parts=[types.Part.from_bytes(data=make_image(8, 8), mime_type="image/png")]
    )
    with pytest.raises(errors.ClientError) as refused:
        rig.genai.models.generate_content(model="gpt-image", contents=picture, config=IMAGE_ONLY)
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert "prompt" in (refused.value.message or "")
