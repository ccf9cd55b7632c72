"""Config files and the sandbox: the example deployment loads as written, `sandbox.enabled`
keeps the sandbox's models beside a file's own, defaults set in a file must name a defined
model, and every model has the family keys are listed by."""

from __future__ import annotations

from pathlib import Path

import pytest

from unigate.config import ConfigError, GatewayConfig, model_family
from unigate.config_source import load_config
from unigate_sandbox.models import SANDBOX_MODELS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gateway.yaml"
ENV = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "GEMINI_API_KEY": "g", "SUNO_RELAY_KEY": "s"}


OPENAI = "providers: [{name: o, protocol: openai, base_url: 'http://x'}]\n"


def _load(tmp_path: Path, text: str) -> GatewayConfig:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_config(path, {})


def test_the_example_config_loads_with_the_sandbox_kept() -> None:
    config = load_config(EXAMPLE, ENV)
    names = {p.name: p.protocol for p in config.providers}
    assert {
        "openai": "openai",
        "anthropic": "anthropic",
        "gemini": "gemini",
        "suno-relay": "suno",
        "sandbox": "sandbox",
    }.items() <= names.items()
    chat = next(m for m in config.models if m.name == "chat-default")
    assert [(r.provider, r.priority) for r in chat.routes] == [("openai", 0), ("anthropic", 1), ("gemini", 2)]
    models = {m.name: m for m in config.models}
    assert set(SANDBOX_MODELS) <= set(models), "the sandbox's models are kept"
    assert config.music.default_model == "chirp-v4-5"
    assert models["chirp-v4-5"].routes[0].provider == "suno-relay", "the file's own model wins"
    relay = next(p for p in config.providers if p.name == "suno-relay")
    assert relay.base_url == "https://suno-relay.example.com" and relay.api_key == "s"


def test_without_sandbox_enabled_a_file_serves_only_its_own(tmp_path: Path) -> None:
    text = OPENAI + "models: [{name: gpt-4o, routes: [{provider: o}]}]\n"
    config = _load(tmp_path, text)
    assert [m.name for m in config.models] == ["gpt-4o"]
    kept = _load(tmp_path, text + "sandbox: {enabled: true}\n")
    assert {"gpt-4o", "sandbox-chat", "chirp-v4"} <= {m.name for m in kept.models}


def test_sandbox_name_taken_by_another_protocol(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="provider name 'sandbox' is taken by a 'openai' provider"):
        _load(tmp_path, "providers: [{name: sandbox, protocol: openai}]\nsandbox: {enabled: true}\n")


def test_a_default_set_in_the_file_must_name_a_defined_model(tmp_path: Path) -> None:
    base = OPENAI + "models: [{name: 'sora-*', routes: [{provider: o}]}]\n"
    with pytest.raises(ConfigError, match=r"media\.default_image_model: no model 'dall-e-3' is defined"):
        _load(tmp_path, base + "media: {default_image_model: dall-e-3}\n")
    with pytest.raises(ConfigError, match=r"music\.default_model: no model 'chirp-v9' is defined"):
        _load(tmp_path, base + "music: {default_model: chirp-v9}\n")
    # Globs count, and the sandbox's models count once it is enabled.
    _load(tmp_path, base + "media: {default_video_model: sora-2-pro}\n")
    _load(tmp_path, base + "music: {default_model: chirp-v4}\nsandbox: {enabled: true}\n")
    # Built-in defaults are not checked: this text-only file has no music or video model.
    _load(tmp_path, base)


def test_model_families(tmp_path: Path) -> None:
    text = (
        "providers: [{name: o, protocol: openai, base_url: 'http://x'}]\n"
        "models:\n"
        "  - {name: gpt-4o, routes: [{provider: o}]}\n"
        "  - {name: dall-e-3, family: image, routes: [{provider: o}]}\n"
        "sandbox: {enabled: true}\n"
    )
    families = {m.name: model_family(m) for m in _load(tmp_path, text).models}
    assert families["gpt-4o"] == "text" and families["dall-e-3"] == "image"
    assert families["chirp-v4"] == "music" and families["sora-2"] == "video"
    assert families["sandbox-tts"] == "audio" and families["picwish/ocr"] == "visual"
    assert families["sandbox-embedding"] == "text" and families["stable-image-core"] == "image"
