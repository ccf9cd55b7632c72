"""Every OpenAI-style answer the gateway produces conforms to OpenAI's own published API
description (`tests/fixtures/openai-openapi/`): bodies, every stream event, and error bodies,
from the sandbox and from relays and translations of fake upstreams. Only the description's
own quirks (`openai_conformance.QUIRKS`, each with its reason) are allowed."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.in_process import InProcessGateway
from tests.support.media_fixtures import encode_tone, make_image, make_mask
from tests.support.openai_conformance import CHAT_TOOLS, RESPONSES_TOOLS, Checked
from tests.support.video import sandbox_config

Json = dict[str, Any]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("conform"), sandbox_config(task_seconds=0.5)) as gw:
        yield gw


@pytest.fixture
def checked(sandbox: InProcessGateway) -> Checked:
    return Checked(sandbox, sandbox.create_key())


def _chat(**extra: Any) -> Json:
    return {"model": "sandbox-chat", "messages": [{"role": "user", "content": "Weather in Paris?"}], **extra}


def test_chat_completions(checked: Checked) -> None:
    checked.post("/v1/chat/completions", _chat())
    checked.post("/v1/chat/completions", _chat(tools=CHAT_TOOLS, tool_choice="required"))
    checked.post("/v1/chat/completions", _chat(n=2, max_tokens=3))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "w", "schema": schema, "strict": True}}
    checked.post("/v1/chat/completions", _chat(response_format=fmt))
    stream = checked.post("/v1/chat/completions", _chat(stream=True, stream_options={"include_usage": True}))
    assert checked.events(stream)[-1]["usage"]["total_tokens"] > 0
    tools = checked.post("/v1/chat/completions", _chat(stream=True, tools=CHAT_TOOLS, tool_choice="required"))
    assert any(c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in checked.events(tools))
    checked.clean()


def test_completions_embeddings_models(checked: Checked) -> None:
    checked.post("/v1/completions", {"model": "sandbox-chat", "prompt": "Once upon a time"})
    checked.post(
        "/v1/completions",
        {
            "model": "sandbox-chat",
            "prompt": "Once",
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    checked.post("/v1/embeddings", {"model": "sandbox-embedding", "input": ["one", "two"]})
    checked.post(
        "/v1/embeddings", {"model": "sandbox-embedding", "input": "one", "encoding_format": "base64"}
    )
    checked.call("GET", "/v1/models")
    checked.call("GET", "/v1/models/sandbox-chat")
    checked.call("GET", "/v1/models/no-such-model", 404)
    checked.post("/v1/chat/completions", {"model": "sandbox-chat"}, 400)
    checked.clean()


def test_images(checked: Checked) -> None:
    prompt = {"model": "sandbox-image", "prompt": "a red fox", "size": "1024x1024"}
    checked.post("/v1/images/generations", prompt)
    checked.post("/v1/images/generations", {**prompt, "response_format": "url", "n": 2})
    image, mask = make_image(64, 64), make_mask(64, 64)
    files = [("image", ("in.png", image, "image/png")), ("mask", ("m.png", mask, "image/png"))]
    form = {"model": "sandbox-image", "prompt": "make it blue"}
    checked.call("POST", "/v1/images/edits", files=files, data=form)
    checked.call("POST", "/v1/images/edits", files=files, data={**form, "response_format": "url"})
    refs = {"images": [{"image_url": _data_url(image)}], "mask": {"image_url": _data_url(mask)}}
    checked.post("/v1/images/edits", {**form, **refs, "size": "1024x1536"})
    checked.post("/v1/images/edits", {**form, **refs, "response_format": "url"})
    checked.post("/v1/images/edits", {**form, "images": [{"file_id": "file-1"}]}, 400)
    checked.clean()


def test_audio(checked: Checked) -> None:
    speech = {"model": "sandbox-tts", "input": "Hello there, general.", "voice": "alloy"}
    checked.post("/v1/audio/speech", speech)
    checked.post("/v1/audio/speech", {**speech, "stream_format": "sse"})
    audio = encode_tone(1.5, "mp3")
    for path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
        for fmt in ("json", "verbose_json"):
            data: Json = {"model": "sandbox-transcribe", "response_format": fmt}
            if fmt == "verbose_json" and path.endswith("transcriptions"):
                data["timestamp_granularities[]"] = ["word", "segment"]
            checked.call("POST", path, files=[("file", ("a.mp3", audio, "audio/mpeg"))], data=data)
    checked.clean()


def test_moderations(checked: Checked) -> None:
    image = {"type": "image_url", "image_url": {"url": _data_url(make_image(32, 32))}}
    checked.post("/v1/moderations", {"input": "I want to kill them."})
    checked.post("/v1/moderations", {"model": "text-moderation-latest", "input": ["hello", "you idiot"]})
    both = checked.post("/v1/moderations", {"input": [{"type": "text", "text": "a picture"}, image]}).json()
    assert both["results"][0]["category_applied_input_types"]["violence"] == ["text", "image"]
    checked.post("/v1/moderations", {"input": [image]})
    checked.post("/v1/moderations", {"input": []}, 400)
    checked.clean()


def test_responses(checked: Checked) -> None:
    base = {"model": "sandbox-chat", "input": "Weather in Paris?"}
    first = checked.post("/v1/responses", base).json()
    checked.post("/v1/responses", {**base, "tools": RESPONSES_TOOLS, "tool_choice": "required"})
    checked.post("/v1/responses", {**base, "max_output_tokens": 16, "instructions": "Be brief."})
    stream = checked.post("/v1/responses", {**base, "stream": True, "previous_response_id": first["id"]})
    kinds = {e["type"] for e in checked.events(stream)}
    assert {"response.created", "response.output_text.delta", "response.completed"} <= kinds
    calls = checked.post(
        "/v1/responses", {**base, "stream": True, "tools": RESPONSES_TOOLS, "tool_choice": "required"}
    )
    assert "response.function_call_arguments.done" in {e["type"] for e in checked.events(calls)}
    cut = checked.post("/v1/responses", {**base, "stream": True, "max_output_tokens": 16})
    assert checked.events(cut)[-1]["type"] == "response.incomplete"
    second = checked.events(stream)[-1]["response"]["id"]
    checked.call("GET", f"/v1/responses/{second}")
    checked.call("GET", f"/v1/responses/{second}/input_items")
    checked.call("GET", f"/v1/responses/{second}/input_items", params={"order": "asc", "limit": 1})
    checked.call("DELETE", f"/v1/responses/{second}")
    checked.call("GET", f"/v1/responses/{second}", 404)
    checked.clean()


def test_background_responses(checked: Checked) -> None:
    base = {"model": "sandbox-chat", "input": "Weather in Paris?", "background": True}
    accepted = checked.post("/v1/responses", base).json()
    assert accepted["status"] == "queued"
    for _ in range(100):
        done = checked.call("GET", f"/v1/responses/{accepted['id']}").json()
        if done["status"] == "completed":
            break
        time.sleep(0.05)
    replay = checked.call("GET", f"/v1/responses/{accepted['id']}", params={"stream": "true"})
    kinds = [e["type"] for e in checked.events(replay)]
    assert kinds[:2] == ["response.created", "response.queued"] and kinds[-1] == "response.completed"
    checked.call("GET", f"/v1/responses/{accepted['id']}", params={"stream": "true", "starting_after": "3"})
    streamed = checked.post("/v1/responses", {**base, "stream": True})
    assert checked.events(streamed)[-1]["type"] == "response.completed"
    later = checked.post("/v1/responses", base).json()
    checked.call("POST", f"/v1/responses/{later['id']}/cancel")
    checked.call("GET", f"/v1/responses/{later['id']}")
    checked.call("GET", f"/v1/responses/{later['id']}", params={"stream": "true"})
    checked.call("POST", f"/v1/responses/{first_id(checked)}/cancel", 400)
    checked.clean()


def first_id(checked: Checked) -> str:
    """A stored response that is not a background one (cancel refuses it)."""
    return str(checked.post("/v1/responses", {"model": "sandbox-chat", "input": "hi"}).json()["id"])


def test_videos(checked: Checked) -> None:
    video = checked.post(
        "/v1/videos", {"model": "sora-2", "prompt": "a fox", "seconds": "4", "size": "720x1280"}
    )
    video_id = video.json()["id"]
    for _ in range(200):
        state = checked.call("GET", f"/v1/videos/{video_id}").json()
        if state["status"] in ("completed", "failed"):
            break
        time.sleep(0.1)
    assert state["status"] == "completed", state
    checked.call("GET", "/v1/videos")
    checked.call("GET", f"/v1/videos/{video_id}/content")
    checked.call("GET", f"/v1/videos/{video_id}/content", params={"variant": "thumbnail"})
    checked.call("GET", f"/v1/videos/{video_id}/content", params={"variant": "spritesheet"})
    checked.post(f"/v1/videos/{video_id}/remix", {"prompt": "now at night"})
    checked.call("DELETE", f"/v1/videos/{video_id}")
    checked.clean()


def _data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()
