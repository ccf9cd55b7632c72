"""The conformance check of `test_openai_conformance.py` on what the gateway makes of fake
upstreams that speak the vendors' wire formats: OpenAI answers relayed (chat, completions,
embeddings, moderations, images, audio, the native Responses API), Anthropic and Gemini
answers translated into chat completions and into the Responses API, Gemini's drawings into
image answers and image-stream events, its speech into audio and speech events, its hearing
into transcripts, and a refusal turned into Responses events. Every body and stream event is
validated against OpenAI's published description; only its own quirks are allowed."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.fake_openai_videos import FakeOpenAIVideos
from tests.support.in_process import InProcessGateway
from tests.support.media_fixtures import encode_tone, make_image, make_mask
from tests.support.openai_conformance import CHAT_TOOLS, RESPONSES_TOOLS, Checked

Json = dict[str, Any]
CHAT_MODELS = ("relay-chat", "claude-chat", "gemini-chat")
RESPONSES_MODELS = ("relay-chat", "refusing", "claude-chat", "gemini-chat", "native-chat")


@dataclass
class Rig:
    gw: InProcessGateway
    key: str
    chat: FakeOpenAI

    def checked(self) -> Checked:
        return Checked(self.gw, self.key)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with (
        FakeOpenAI() as chat,
        FakeOpenAI(refusal="I can't help with that.") as refusing,
        FakeOpenAI(mode="die_mid") as dying,
        FakeAnthropic() as claude,
        FakeGemini() as gemini,
        FakeOpenAIResponses() as native,
        FakeOpenAIMedia() as media,
        FakeOpenAIVideos() as sora,
    ):

        def openai(name: str, base_url: str, **extra: Any) -> Json:
            return {
                "name": name,
                "protocol": "openai",
                "base_url": base_url,
                "api_key": f"sk-{name}",
                **extra,
            }

        def route(name: str, provider: str, model: str) -> Json:
            return {"name": name, "routes": [{"provider": provider, "model": model}]}

        config = {
            "providers": [
                openai("chat", chat.base_url),
                openai("refusing", refusing.base_url),
                openai("dying", dying.base_url),
                openai("native", native.base_url, responses="native"),
                openai("media", media.base_url),
                {"name": "sora", "protocol": "openai", "base_url": sora.base_url, "api_key": sora.api_key},
                # pragma: allowlist nextline secret
                {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "sk-ant"},
                # pragma: allowlist nextline secret
                {"name": "gem", "protocol": "gemini", "base_url": gemini.base_url, "api_key": "AIza-up"},
            ],
            "models": [
                route("relay-chat", "chat", "gpt-up"),
                route("refusing", "refusing", "gpt-up"),
                route("dying", "dying", "gpt-up"),
                route("native-chat", "native", "gpt-native"),
                route("claude-chat", "claude", "claude-up"),
                route("gemini-chat", "gem", "gemini-up"),
                route("relay-embedding", "chat", "text-embedding-up"),
                route("relay-moderation", "chat", "omni-moderation-latest"),
                route("painter", "media", "gpt-image-1"),
                route("nano", "gem", "gemini-2.5-flash-image"),
                route("gemini-voice", "gem", "gemini-2.5-flash-preview-tts"),
                route("gemini-listener", "gem", "gemini-2.5-flash"),
                route("dalle", "media", "dall-e-2"),
                route("whisper", "media", "whisper-1"),
                route("voice", "media", "tts-1"),
                route("relay-video", "sora", "sora-2"),
            ],
            "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
        }
        with InProcessGateway(tmp_path_factory.mktemp("conform-relays"), config) as gw:
            yield Rig(gw, gw.create_key(), chat)


def _chat(model: str, **extra: Any) -> Json:
    return {"model": model, "messages": [{"role": "user", "content": "Weather in Paris?"}], **extra}


@pytest.mark.parametrize("model", CHAT_MODELS)
def test_chat_completions(rig: Rig, model: str) -> None:
    checked = rig.checked()
    checked.post("/v1/chat/completions", _chat(model))
    checked.post("/v1/chat/completions", _chat(model, tools=CHAT_TOOLS))
    checked.post("/v1/chat/completions", _chat(model, stream=True, stream_options={"include_usage": True}))
    calls = checked.post("/v1/chat/completions", _chat(model, stream=True, tools=CHAT_TOOLS))
    assert any(c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in checked.events(calls))
    checked.clean()


def test_completions_embeddings_moderations(rig: Rig) -> None:
    checked = rig.checked()
    checked.post("/v1/completions", {"model": "relay-chat", "prompt": "Once"})
    checked.post("/v1/completions", {"model": "relay-chat", "prompt": "Once", "stream": True})
    checked.post("/v1/embeddings", {"model": "relay-embedding", "input": ["one", "two"]})
    checked.post("/v1/embeddings", {"model": "relay-embedding", "input": "one", "encoding_format": "base64"})
    flagged = checked.post("/v1/moderations", {"model": "relay-moderation", "input": "I want to kill them."})
    assert flagged.json()["results"][0]["categories"]["violence"] is True
    checked.post("/v1/moderations", {"model": "relay-moderation", "input": ["hello", "kill"]})
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    checked.post(
        "/v1/moderations", {"model": "relay-moderation", "input": [{"type": "text", "text": "x"}, image]}
    )
    assert rig.chat.received[-1].path == "/v1/moderations"  # relayed, image URL and all
    assert rig.chat.received[-1].body["input"][1] == image
    checked.clean()


@pytest.mark.parametrize("model", RESPONSES_MODELS)
def test_responses(rig: Rig, model: str) -> None:
    checked = rig.checked()
    base = {"model": model, "input": "Weather in Paris?"}
    first = checked.post("/v1/responses", base).json()
    stream = checked.post("/v1/responses", {**base, "stream": True, "previous_response_id": first["id"]})
    kinds = {e["type"] for e in checked.events(stream)}
    if model == "refusing":
        assert {"response.refusal.delta", "response.refusal.done"} <= kinds
    else:
        assert "response.output_text.done" in kinds
        calls = checked.post("/v1/responses", {**base, "stream": True, "tools": RESPONSES_TOOLS})
        assert "response.function_call_arguments.done" in {e["type"] for e in checked.events(calls)}
        checked.post("/v1/responses", {**base, "tools": RESPONSES_TOOLS})
    last = checked.events(stream)[-1]["response"]["id"]
    checked.call("GET", f"/v1/responses/{last}")
    checked.call("GET", f"/v1/responses/{last}/input_items")
    checked.call("DELETE", f"/v1/responses/{last}")
    checked.clean()


def test_a_stream_cut_short_fails_in_band(rig: Rig) -> None:
    checked = rig.checked()
    cut = checked.post("/v1/responses", {"model": "dying", "input": "Weather in Paris?", "stream": True})
    assert [e["type"] for e in checked.events(cut)][-2:] == ["response.failed", "error"]
    chat = checked.post("/v1/chat/completions", _chat("dying", stream=True))
    assert "error" in checked.events(chat)[-1]
    checked.clean()


def test_background_responses_on_a_translated_route(rig: Rig) -> None:
    checked = rig.checked()
    accepted = checked.post(
        "/v1/responses", {"model": "claude-chat", "input": "hi", "background": True}
    ).json()
    streamed = checked.post(
        "/v1/responses", {"model": "claude-chat", "input": "hi", "background": True, "stream": True}
    )
    assert checked.events(streamed)[-1]["type"] == "response.completed"
    for _ in range(200):
        if checked.call("GET", f"/v1/responses/{accepted['id']}").json()["status"] == "completed":
            break
    replay = checked.call("GET", f"/v1/responses/{accepted['id']}", params={"stream": "true"})
    assert checked.events(replay)[-1]["type"] == "response.completed"
    checked.clean()


def test_images_and_audio(rig: Rig) -> None:
    checked = rig.checked()
    generated = checked.post(
        "/v1/images/generations", {"model": "painter", "prompt": "a fox", "size": "1024x1024"}
    )
    assert generated.json()["usage"]["input_tokens_details"]["text_tokens"] > 0
    checked.post("/v1/images/generations", {"model": "dalle", "prompt": "a fox", "response_format": "url"})
    image, mask = make_image(64, 64), make_mask(64, 64)
    files = [("image", ("a.png", image, "image/png")), ("mask", ("m.png", mask, "image/png"))]
    checked.call("POST", "/v1/images/edits", files=files, data={"model": "painter", "prompt": "blue"})
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    checked.post("/v1/images/edits", {"model": "painter", "prompt": "blue", "images": [{"image_url": url}]})
    for extra in ({}, {"response_format": "url", "n": 2}, {"stream": True}):
        checked.post("/v1/images/generations", {"model": "nano", "prompt": "a fox", **extra})
    checked.post("/v1/images/generations", {"model": "nano", "prompt": "a forbidden fox"}, status=400)
    checked.call("POST", "/v1/images/edits", files=files, data={"model": "nano", "prompt": "blue"})
    checked.post("/v1/audio/speech", {"model": "voice", "input": "Hello", "voice": "alloy"})
    for extra in ({}, {"stream_format": "sse"}):
        checked.post(
            "/v1/audio/speech", {"model": "gemini-voice", "input": "Hello", "voice": "Kore", **extra}
        )
    audio = encode_tone(1.0, "mp3")
    for path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
        for fmt in ("json", "verbose_json"):
            form = {"model": "whisper", "response_format": fmt}
            checked.call("POST", path, files=[("file", ("a.mp3", audio, "audio/mpeg"))], data=form)
        form = {"model": "gemini-listener"}  # json: `text` is text/plain, which OpenAI's description omits
        checked.call("POST", path, files=[("file", ("a.mp3", audio, "audio/mpeg"))], data=form)
    checked.clean()


def test_videos(rig: Rig) -> None:
    checked = rig.checked()
    body = {"model": "relay-video", "prompt": "a harbour", "seconds": "4", "size": "720x1280"}
    video_id = checked.post("/v1/videos", body).json()["id"]
    for _ in range(100):
        state = checked.call("GET", f"/v1/videos/{video_id}").json()
        if state["status"] in ("completed", "failed"):
            break
        time.sleep(0.1)
    assert state["status"] == "completed", state
    checked.call("GET", "/v1/videos")
    checked.call("GET", f"/v1/videos/{video_id}/content")
    checked.call("GET", f"/v1/videos/{video_id}/content", params={"variant": "spritesheet"})
    remix = checked.post(f"/v1/videos/{video_id}/remix", {"prompt": "at night"}).json()
    assert remix["remixed_from_video_id"] == video_id
    checked.call("DELETE", f"/v1/videos/{video_id}")
    checked.call("GET", f"/v1/videos/{video_id}", 404)
    checked.clean()
