"""The sandbox beside a real config, through the real server and SDKs: the README's config example
runs as written with the sandbox kept, defaults are checked at start-up, the sandbox refuses a
model of the wrong kind in each family's error shape, and /v1/models lists a family-limited
key only its families' models."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from tests.support.gateway import GatewayProcess, serve_refused
from tests.support.net import http
from tests.support.readme import page
from tests.support.served import ServedGateway


def _readme_config() -> str:
    section = page("configuration").split("\nConfig file (", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found
    return found.group(1)


def test_the_readme_config_runs_as_written_with_the_sandbox_kept(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(_readme_config())
    gw = ServedGateway(tmp_path, env={"UNIGATE_CONFIG": str(config)})
    # Set after construction: ServedGateway clears vendor keys from the inherited environment.
    gw.env.update({"OPENAI_API_KEY": "sk-unused", "TOGETHER_API_KEY": "t-unused"})
    with gw:
        key = gw.create_key()
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
        reply = client.chat.completions.create(
            model="sandbox-chat", messages=[{"role": "user", "content": "Hello there"}]
        )
        assert reply.choices[0].message.content
        listed = {m.id for m in client.models.list()}
        assert {"gpt-4o-mini", "sandbox-chat", "chirp-v4", "sora-2"} <= listed
        providers = {p["name"] for p in gw.admin("GET", "/admin/providers").json()["data"]}
        assert providers == {"main-openai", "backup", "sandbox"}


@pytest.mark.process
def test_a_default_naming_no_model_stops_the_start(tmp_path: Path) -> None:
    _, proc = serve_refused(
        tmp_path,
        "providers: [{name: o, protocol: openai, base_url: 'http://127.0.0.1:9/v1'}]\n"
        "models: [{name: gpt-4o, routes: [{provider: o}]}]\n"
        "media: {default_video_model: sora-2}\n",
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("error: config file") and "\n" not in line
    assert "media.default_video_model: no model 'sora-2' is defined" in line


@pytest.mark.process
def test_unbacked_built_in_defaults_are_one_log_line(tmp_path: Path) -> None:
    config = {
        "providers": [{"name": "o", "protocol": "openai", "base_url": "http://127.0.0.1:9/v1"}],
        "models": [{"name": "gpt-4o", "routes": [{"provider": "o"}]}],
    }
    with GatewayProcess(tmp_path, config=config) as gw:
        lines = [line for line in gw.log().splitlines() if "no model defines" in line]
        assert len(lines) == 1
        assert "music.default_model=chirp-v4" in lines[0] and "media.default_video_model=sora-2" in lines[0]


# --- the sandbox refuses its models used for another kind ------------------------------------


@pytest.fixture(scope="module")
def key(sandbox_gateway: ServedGateway) -> str:
    return sandbox_gateway.create_key()


def _openai(gw: ServedGateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)


def test_chat_and_embeddings_with_the_wrong_kind(sandbox_gateway: ServedGateway, key: str) -> None:
    client = _openai(sandbox_gateway, key)
    with pytest.raises(openai.NotFoundError) as chat:
        client.chat.completions.create(model="chirp-v4", messages=[{"role": "user", "content": "x"}])
    assert chat.value.code == "model_not_supported"
    assert "'chirp-v4' is a music model" in chat.value.message and "sandbox-chat" in chat.value.message
    with pytest.raises(openai.NotFoundError, match="'sandbox-image' is an image model"):
        client.embeddings.create(model="sandbox-image", input="x")
    with pytest.raises(openai.NotFoundError, match="does not serve image calls"):
        client.images.generate(model="sandbox-chat", prompt="a lighthouse")
    with pytest.raises(openai.NotFoundError, match="does not serve speech calls"):
        client.audio.speech.create(model="sandbox-embedding", voice="alloy", input="hi")
    # The right kinds still answer.
    assert client.embeddings.create(model="sandbox-embedding", input="x").data


def test_anthropic_and_music_shapes(sandbox_gateway: ServedGateway, key: str) -> None:
    client = anthropic.Anthropic(base_url=sandbox_gateway.base_url, api_key=key, max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as err:
        client.messages.create(
            model="sandbox-tts", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert err.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    res = http(
        "POST",
        sandbox_gateway.base_url + "/suno/submit/music",
        {"prompt": "la la", "mv": "sandbox-chat", "title": "t", "tags": "pop"},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 404, res.body
    body = res.json()
    assert "is a chat model" in body["message"] and body["code"] != "success"


# --- /v1/models by the key's families --------------------------------------------------------


def _names(models: Any) -> set[str]:
    return {m.id for m in models}


def test_models_listed_by_family(sandbox_gateway: ServedGateway) -> None:
    gw = sandbox_gateway
    music_key = gw.create_key(families=["music"])
    listed = _names(_openai(gw, music_key).models.list())
    assert listed == {"chirp-v3-0", "chirp-v3-5", "chirp-v4", "chirp-v4-5"}
    with pytest.raises(openai.NotFoundError):
        _openai(gw, music_key).models.retrieve("sandbox-chat")
    claude = anthropic.Anthropic(base_url=gw.base_url, api_key=music_key, max_retries=0)
    assert {m.id for m in claude.models.list()} == listed
    gemini = genai.Client(api_key=music_key, http_options=types.HttpOptions(base_url=gw.base_url))
    assert {str(m.name).removeprefix("models/") for m in gemini.models.list()} == listed

    mixed = _names(_openai(gw, gw.create_key(families=["text", "audio"])).models.list())
    assert {"sandbox-chat", "sandbox-embedding", "sandbox-tts", "sandbox-transcribe", "audio1.0"} <= mixed
    assert not mixed & {"chirp-v4", "sora-2", "sandbox-image", "picwish/ocr"}
    everything = _names(_openai(gw, gw.create_key()).models.list())
    assert mixed | listed < everything
