"""Without a config file, ANTHROPIC_API_KEY and GEMINI_API_KEY (and their *_BASE_URL) add those
vendors like OPENAI_API_KEY does; and a route whose provider lacks the operation asked for is
skipped by routing instead of answering 400."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.served import ServedGateway
from unigate.config_source import default_config


def test_default_config_takes_each_vendor_from_the_environment() -> None:
    config = default_config(
        {"ANTHROPIC_API_KEY": "sk-ant", "GEMINI_API_KEY": "g-key", "GEMINI_BASE_URL": "http://gem.local"}
    )
    providers = {p.name: (p.protocol, p.base_url, p.api_key) for p in config.providers}
    assert providers["anthropic"] == ("anthropic", "https://api.anthropic.com", "sk-ant")
    assert providers["gemini"] == ("gemini", "http://gem.local", "g-key")
    assert "openai" not in providers
    routes = {m.name: m.routes[0].provider for m in config.models}
    assert routes["claude-*"] == "anthropic" and routes["gemini-*"] == "gemini"
    assert routes["sandbox-chat"] == "sandbox", "the sandbox stays"


def test_anthropic_and_gemini_keys_from_the_environment_serve_their_models(tmp_path: Path) -> None:
    with FakeAnthropic() as claude, FakeGemini() as gemini:
        env = {
            "ANTHROPIC_API_KEY": "sk-ant-env",
            "ANTHROPIC_BASE_URL": claude.base_url,
            "GEMINI_API_KEY": "gem-env",
            "GEMINI_BASE_URL": gemini.base_url,
        }
        with ServedGateway(tmp_path, env=env) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            ask = [{"role": "user", "content": "Hi"}]
            reply = client.chat.completions.create(model="claude-3-5-haiku-latest", messages=ask)
            assert reply.choices[0].message.content == "Hello from the fake Anthropic upstream"
            assert claude.headers[-1]["x-api-key"] == "sk-ant-env"
            assert claude.received[-1]["model"] == "claude-3-5-haiku-latest"
            reply = client.chat.completions.create(model="gemini-2.0-flash", messages=ask)
            assert reply.choices[0].message.content == "Hello from the fake Gemini upstream"
            call, _, headers = gemini.received[-1]
            assert (
                call.startswith("gemini-2.0-flash:generateContent") and headers["x-goog-api-key"] == "gem-env"
            )
            assert client.chat.completions.create(model="sandbox-chat", messages=ask).choices
            # Gemini's image models are in the image family and draw through generateContent.
            drawn = client.images.generate(model="gemini-2.5-flash-image", prompt="a kite")
            assert drawn.data and drawn.data[0].b64_json
            assert gemini.received[-1][0].startswith("gemini-2.5-flash-image:generateContent")
            # And its TTS models are in the audio family, speaking through generateContent.
            tts = "gemini-2.5-flash-preview-tts"
            assert client.audio.speech.create(model=tts, voice="Kore", input="hi").content.startswith(b"RIFF")


def test_a_route_without_the_operation_is_skipped(tmp_path: Path) -> None:
    with FakeAnthropic() as claude:
        config = {
            "providers": [
                {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "k"},
                {"name": "sandbox", "protocol": "sandbox"},
            ],
            "models": [
                # Anthropic has no embeddings: the first route is skipped, the second answers.
                {
                    "name": "embed-any",
                    "routes": [
                        {"provider": "claude", "priority": 0},
                        {"provider": "sandbox", "model": "sandbox-embedding", "priority": 1},
                    ],
                },
                {"name": "claude-only", "routes": [{"provider": "claude"}]},
            ],
            "routing": {"cooldown_after_failures": 1},
        }
        with ServedGateway(tmp_path, config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            for _ in range(3):  # a skip is not a failure: the route never cools down
                assert len(client.embeddings.create(model="embed-any", input="x").data[0].embedding) > 0
            with pytest.raises(openai.BadRequestError) as refused:
                client.embeddings.create(model="claude-only", input="x")
            assert refused.value.code == "unsupported_operation"
            assert claude.received == [], "nothing was sent to the upstream without the operation"
            health = gw.admin("GET", "/admin/models").json()["data"]
            claude_route = next(m for m in health if m["name"] == "embed-any")["routes"][0]
            assert claude_route["health"]["consecutive_failures"] == 0
            assert "failed" not in "\n".join(line for line in gw.log().splitlines() if "routing" in line)
