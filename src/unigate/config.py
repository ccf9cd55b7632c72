"""The YAML configuration file: schema, `${ENV}` interpolation and the built-in default.

Unknown keys are rejected with a message naming the key path and the file, because a
misspelt `read_timout` silently falling back to a default is worse than refusing to start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

MiB = 1024 * 1024
_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """The configuration file cannot be used; the message says where and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    protocol: str = Field(min_length=1)
    base_url: str = ""
    api_key: str = ""
    connect_timeout: float = Field(default=5.0, gt=0)
    read_timeout: float = Field(default=60.0, gt=0)
    total_timeout: float = Field(default=600.0, gt=0)
    headers: dict[str, str] = Field(default_factory=dict)


class RouteConfig(_Strict):
    provider: str
    model: str | None = None  # upstream model id; defaults to the id the client sent
    priority: int = 0
    weight: float = Field(default=1.0, gt=0)
    connect_timeout: float | None = Field(default=None, gt=0)
    read_timeout: float | None = Field(default=None, gt=0)
    total_timeout: float | None = Field(default=None, gt=0)


class ModelConfig(_Strict):
    name: str = Field(min_length=1)  # may be a glob such as `gpt-*`
    routes: list[RouteConfig] = Field(min_length=1)
    price_per_call: float = Field(default=0.0, ge=0)


class RoutingConfig(_Strict):
    cooldown_after_failures: int = Field(default=3, ge=1)
    cooldown_seconds: float = Field(default=30.0, ge=0)


class LimitsConfig(_Strict):
    max_json_body: int = Field(default=20 * MiB, gt=0)
    max_audio_upload: int = Field(default=25 * MiB, gt=0)
    max_image_upload: int = Field(default=50 * MiB, gt=0)
    # Seconds of upstream silence before a stream gets a keep-alive (0 = never).
    stream_keepalive: float = Field(default=15.0, ge=0)


class TasksConfig(_Strict):
    poll_interval: float = Field(default=1.0, gt=0)  # first poll delay; grows with backoff
    max_poll_interval: float = Field(default=30.0, gt=0)
    deadline_seconds: float = Field(default=1800.0, gt=0)  # unfinished by then: FAILURE + refund
    webhook_retry_schedule: list[float] = Field(
        default_factory=lambda: [
            0.0,
            5.0,
            30.0,
            120.0,
            600.0,
            1800.0,
            3600.0,
            7200.0,
            14400.0,
            28800.0,
            43200.0,
            86400.0,
        ]
    )
    webhook_timeout: float = Field(default=15.0, gt=0)
    allow_private_webhooks: bool = False


class MusicConfig(_Strict):
    default_model: str = "chirp-v4"  # the `mv` used when a submit omits it


class SandboxConfig(_Strict):
    music_seconds: float = Field(default=8.0, gt=0)  # time for a sandbox music task to finish
    task_seconds: float = Field(default=4.0, gt=0)  # video, sound effect, lip sync, visual tasks


class MediaConfig(_Strict):
    """Model ids for media calls whose request names none."""

    default_image_model: str = "sandbox-image"  # /v1/images/* without `model`
    fish_tts_model: str = "s1"  # /fish/v1/tts without a `model` header
    fish_asr_model: str = "fish-asr"  # /fish/v1/asr (Fish's ASR takes no model)
    sd3_model: str = "sd3.5-large"  # stable-image/generate/sd3 without `model`
    default_video_model: str = "sora-2"  # /v1/videos without `model`
    lip_sync_model: str = "lip-sync"  # /ent/v2/lip-sync (Vidu's lip sync takes no model)


class GatewayConfig(_Strict):
    providers: list[ProviderConfig] = Field(default_factory=list)
    models: list[ModelConfig] = Field(default_factory=list)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    music: MusicConfig = Field(default_factory=MusicConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    media: MediaConfig = Field(default_factory=MediaConfig)

    @model_validator(mode="after")
    def _check_references(self) -> GatewayConfig:
        names = [p.name for p in self.providers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate provider name(s): {', '.join(dupes)}")
        known = set(names)
        for i, model in enumerate(self.models):
            for j, route in enumerate(model.routes):
                if route.provider not in known:
                    raise ValueError(f"models[{i}].routes[{j}].provider: unknown provider {route.provider!r}")
        return self


SANDBOX_TEXT_MODELS = ("sandbox-chat", "sandbox-embedding")
SANDBOX_MUSIC_MODELS = ("chirp-v3-0", "chirp-v3-5", "chirp-v4", "chirp-v4-5")
SANDBOX_MEDIA_MODELS = (
    "sandbox-transcribe",  # /v1/audio/transcriptions and /translations
    "sandbox-tts",  # /v1/audio/speech
    "sandbox-image",  # /v1/images/*, and image output from :generateContent
    "s1",  # /fish/v1/tts (Fish's `model` header)
    "fish-asr",  # /fish/v1/asr
    "stable-image-ultra",
    "stable-image-core",
    "sd3.5-large",
    "sd3.5-large-turbo",
    "sd3.5-medium",
    "sd3.5-flash",
)


SANDBOX_VIDEO_MODELS = (
    "sandbox-video",  # any video family
    "sora-2",  # /v1/videos' default model
    "sora-2-pro",
    "kling-v1",  # Kling's default `model_name`
    "kling-v1-6",
    "kling-v2-master",
    "kling-v2-1-master",
    "kling-v2-5-turbo",
    "kling-v2-6",
    "veo-2.0-generate-001",
    "veo-3.0-generate-001",
    "veo-3.0-fast-generate-001",
    "veo-3.1-generate-preview",
)

SANDBOX_TOOL_MODELS = (
    "audio1.0",  # /ent/v2/text2audio
    "lip-sync",  # /ent/v2/lip-sync (media.lip_sync_model)
    "picwish/segmentation",  # /api/tasks/visual/segmentation
    "picwish/inpaint",
    "picwish/scale",
    "picwish/ocr",  # /api/tasks/document/ocr
)


def default_config(env_credentials: Mapping[str, str]) -> GatewayConfig:
    """The configuration used when no file is given: the sandbox for every family, plus
    real vendors whose credentials are present in the environment."""
    providers: list[dict[str, Any]] = [{"name": "sandbox", "protocol": "sandbox"}]
    models: list[dict[str, Any]] = [
        {"name": name, "routes": [{"provider": "sandbox"}]}
        for name in (
            *SANDBOX_TEXT_MODELS,
            *SANDBOX_MUSIC_MODELS,
            *SANDBOX_MEDIA_MODELS,
            *SANDBOX_VIDEO_MODELS,
            *SANDBOX_TOOL_MODELS,
        )
    ]
    if key := env_credentials.get("OPENAI_API_KEY"):
        base = env_credentials.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
        providers.append({"name": "openai", "protocol": "openai", "base_url": base, "api_key": key})
        for pattern in (
            "gpt-*",
            "o1*",
            "o3*",
            "o4*",
            "chatgpt-*",
            "text-embedding-*",
            "whisper-*",
            "tts-*",
            "dall-e-*",
        ):
            models.append({"name": pattern, "routes": [{"provider": "openai"}]})
    return GatewayConfig.model_validate({"providers": providers, "models": models})


def load_config(path: Path | None, env: Mapping[str, str] | None = None) -> GatewayConfig:
    env = os.environ if env is None else env
    if path is None:
        return default_config(env)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping")
    data = _interpolate(raw, env, path, "")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None


def _interpolate(value: Any, env: Mapping[str, str], path: Path, where: str) -> Any:
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError(
                f"config file {path}: {where or 'value'}: environment variable {name} is not set"
            )

        return _ENV_RE.sub(sub, value)
    if isinstance(value, dict):
        return {k: _interpolate(v, env, path, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, env, path, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _describe(exc: ValidationError, path: Path) -> str:
    lines = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        if err["type"] == "extra_forbidden":
            lines.append(f"{loc}: unknown key")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            lines.append(f"{loc}: {msg}" if loc else msg)
    return f"config file {path}: " + "; ".join(lines)
