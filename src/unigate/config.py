"""The configuration's schema: every key, its type, bounds, default and description (the
configuration reference is generated from these declarations). Reading it, from the file or the
environment, is `config_source.py`'s.

Unknown keys are rejected with a message naming the key path and the file, because a
misspelt `read_timout` silently falling back to a default is worse than refusing to start.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from unigate.config_file import ConfigError as ConfigError  # raised here, caught by its users

MiB = 1024 * 1024
# The families an API key can be limited to.
Family = Literal["text", "image", "audio", "music", "video", "visual"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderConfig(_Strict):
    """An upstream: where it is, the protocol it speaks, its credential and how to reach it."""

    name: str = Field(
        min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$", description="unique; what routes name in `provider`"
    )
    protocol: str = Field(
        min_length=1,
        description="openai | azure | anthropic | gemini | suno | fish | stability | kling | vidu | "
        "picwish | sandbox (or an installed plugin's)",
    )
    base_url: str = Field(
        default="", description="what the vendor's own SDK takes as base URL; empty: the protocol's own"
    )
    api_key: str = Field(default="", description="the upstream's credential, usually `${VENDOR_API_KEY}`")
    connect_timeout: float = Field(default=5.0, gt=0, description="seconds to open a connection")
    read_timeout: float = Field(
        default=60.0, gt=0, description="seconds: longest silence between upstream bytes"
    )
    total_timeout: float = Field(default=600.0, gt=0, description="seconds for the whole request")
    headers: dict[str, str] = Field(
        default_factory=dict, description="extra headers sent upstream (never replacing the credential)"
    )
    # Egress: unset, HTTPS_PROXY/HTTP_PROXY apply (with NO_PROXY).
    proxy: str | None = Field(
        default=None,
        description="an http:// proxy URL (CONNECT for https upstreams), or `direct` to ignore "
        "HTTPS_PROXY/HTTP_PROXY (see Egress)",
    )
    ca_file: str | None = Field(
        default=None, description="PEM CA bundle trusted in addition to the system's store"
    )
    client_cert: str | None = Field(
        default=None, description="PEM client certificate (mTLS), with `client_key`"
    )
    client_key: str | None = Field(default=None, description="the client certificate's PEM key")
    max_connections: int = Field(
        default=100, ge=1, le=100_000, description="open connections to this provider; callers beyond wait"
    )
    keepalive: float = Field(default=15.0, gt=0, description="seconds an idle connection is kept")
    batch_discount: float = Field(
        default=0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="the share of the price a batch line this provider answers is not charged (0.5: "
        "half price; see Batches)",
    )
    responses: Literal["native", "translate"] = Field(
        default="translate",
        description="`openai`/`azure` only: `native` says the upstream serves the Responses API itself, "
        "so /v1/responses is relayed to its `/responses`; `translate` goes through chat completions "
        "(see Native Responses API)",
    )
    # OpenAI refuses web_search_options but from its search models, hence `auto`.
    web_search: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="`openai`/`azure` only: which chat calls keep `web_search_options`: `auto` only for "
        "upstream models whose name has `search`, `always` (an upstream that searches for every "
        "model) or `never`; a call that loses it names it in x-unigate-dropped-fields",
    )
    batches: Literal["native", "gateway"] = Field(
        default="gateway",
        description="`openai`/`azure`/`anthropic` only: `native` relays a whole batch whose lines all "
        "route here to the vendor's own batch API (its discount, its 24 h window); `gateway` runs the "
        "lines itself (see Native batches)",
    )

    @model_validator(mode="after")
    def _check_responses(self) -> ProviderConfig:
        if self.responses == "native" and self.protocol not in ("openai", "azure"):
            # `translate` is accepted everywhere: a dumped default config writes it for every provider.
            raise ValueError(
                f"responses: native is for `openai` and `azure` providers only (a {self.protocol!r} "
                "upstream's Responses calls are always translated)"
            )
        if self.responses == "native" and self.protocol == "azure" and "/deployments/" in self.base_url:
            # Azure serves /responses only on its v1 surface, the deployment named in `model`.
            raise ValueError(
                "responses: native on azure needs base_url https://{resource}.openai.azure.com/openai/v1 "
                "(where Azure serves the Responses API; the route's model names the deployment), "
                "not a deployment URL"
            )
        if self.web_search != "auto" and self.protocol not in ("openai", "azure"):
            raise ValueError(
                f"web_search: is for `openai` and `azure` providers only (a {self.protocol!r} upstream "
                "is always given its own search tool)"
            )
        return self

    @model_validator(mode="after")
    def _check_batches(self) -> ProviderConfig:
        if self.batches != "native":
            return self  # `gateway` is accepted everywhere: a dumped default config writes it
        if self.protocol not in ("openai", "azure", "anthropic"):
            raise ValueError(
                f"provider {self.name!r}: batches: native is for `openai`, `azure` and `anthropic` "
                f"providers only (a {self.protocol!r} upstream has no batch API): remove it or set "
                "batches: gateway"
            )
        if self.protocol == "azure" and "/deployments/" in self.base_url:
            # Azure serves /files and /batches on its v1 surface; the lines' `model` names the deployment.
            raise ValueError(
                f"provider {self.name!r}: batches: native on azure needs base_url "
                "https://{resource}.openai.azure.com/openai/v1 (where Azure serves /files and /batches), "
                "not a deployment URL"
            )
        return self

    @model_validator(mode="after")
    def _check_base_url(self) -> ProviderConfig:
        from urllib.parse import urlsplit

        if not self.base_url:
            return self  # the protocol's own default
        parts = urlsplit(self.base_url)
        try:
            parts.port  # noqa: B018 - raises for a port that is not a number in range
            valid = parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc
        except ValueError:
            valid = False
        if not valid:
            raise ValueError(
                f"provider {self.name!r}: base_url {self.base_url!r} is not an http:// or https:// URL "
                "with a host and no credentials (e.g. https://api.openai.com/v1)"
            )
        if parts.fragment:
            raise ValueError(f"provider {self.name!r}: base_url {self.base_url!r} must not have a #fragment")
        return self

    @model_validator(mode="after")
    def _check_egress(self) -> ProviderConfig:
        for key in ("ca_file", "client_cert", "client_key"):
            path = getattr(self, key)
            if path and not Path(path).is_file():
                raise ValueError(f"{key}: no file at {path}")
        if self.client_key and not self.client_cert:
            raise ValueError("client_key: needs client_cert")
        if self.proxy not in (None, "direct"):
            from urllib.parse import urlsplit

            parts = urlsplit(self.proxy if "://" in self.proxy else f"http://{self.proxy}")
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError(f"proxy: {self.proxy!r} is not an http:// proxy URL (or 'direct')")
        return self


class RouteConfig(_Strict):
    """One way to serve a model: a provider and the upstream's model id."""

    provider: str = Field(description="the provider's `name`")
    model: str | None = Field(
        default=None, description="the upstream model id; unset: the id the client sent"
    )
    priority: int = Field(default=0, description="routes are tried lowest priority first")
    weight: float = Field(default=1.0, gt=0, description="share of calls among routes of one priority")
    connect_timeout: float | None = Field(default=None, gt=0, description="overrides the provider's")
    read_timeout: float | None = Field(default=None, gt=0, description="overrides the provider's")
    total_timeout: float | None = Field(default=None, gt=0, description="overrides the provider's")


class ModelConfig(_Strict):
    """A model id clients send, its routes, prices and limits. Prices are in any currency (the
    keys' budgets' one), charged from the real usage of each call."""

    name: str = Field(min_length=1, description="the id clients send; may be a glob (`gpt-*`)")
    routes: list[RouteConfig] = Field(
        min_length=1,
        description="where the model's calls go, at least one: lowest `priority` first, weighted random "
        "within a priority",
    )
    price_per_call: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="per successful call (tasks, media)"
    )
    input_per_million: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="per million input tokens (text)"
    )
    output_per_million: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="per million output tokens (text)"
    )
    rpm: int | None = Field(
        default=None, ge=1, description="requests per minute across every key (an upstream's quota)"
    )
    tpm: int | None = Field(default=None, ge=1, description="tokens per minute across every key")
    family: Family | None = Field(
        default=None,
        description="the family whose keys see it in /v1/models; unset: a provider plugin's family "
        "for that name, else `text`",
    )
    batch_discount: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="a batch line's discount for this model, over its provider's `batch_discount`",
    )


class RoutingConfig(_Strict):
    """Fallback between routes: a route that keeps failing is skipped for a while."""

    cooldown_after_failures: int = Field(
        default=3, ge=1, description="consecutive failures before a route is skipped"
    )
    cooldown_seconds: float = Field(default=30.0, ge=0, description="how long a failing route is skipped")


class RedisDownConfig(_Strict):
    """What each kind of limit does while Redis (UNIGATE_REDIS_URL) cannot be reached: `local`
    decides on this node's own counters, `closed` refuses with 503 (limits/redis_down.py)."""

    rates: Literal["local", "closed"] = Field(
        default="local", description="rpm/tpm: `local` each node's own counters decide, `closed` 503"
    )
    budgets: Literal["local", "closed"] = Field(
        default="closed",
        description="calls on keys with a budget: `closed` 503, `local` each node's counters",
    )


class LimitsConfig(_Strict):
    """Request sizes and what budgets and stored state may take."""

    max_json_body: int = Field(default=20 * MiB, gt=0, description="bytes of a JSON body; 413 beyond")
    max_audio_upload: int = Field(default=25 * MiB, gt=0, description="bytes of an audio file; 413 beyond")
    max_image_upload: int = Field(default=50 * MiB, gt=0, description="bytes of an image file; 413 beyond")
    stream_keepalive: float = Field(
        default=15.0,
        ge=0,
        description="seconds of upstream silence before a stream gets a keep-alive; 0: never",
    )
    # What concurrent calls may overspend a budget by is what each produces beyond this.
    budget_output_estimate: int = Field(
        default=1024,
        ge=0,
        description="output tokens a budget reserves for a text call without max_tokens (settled to the "
        "real count when it ends)",
    )
    stored_bytes_per_key: int = Field(
        default=1024 * MiB,
        ge=0,
        description="bytes of stored responses (and their stream events) and files one key may hold; 429 "
        "`storage_quota_exceeded` beyond; 0: no quota",
    )
    redis_down: RedisDownConfig = Field(default_factory=RedisDownConfig)


class TasksConfig(_Strict):
    """Asynchronous jobs: how their upstreams are polled and their webhooks delivered."""

    poll_interval: float = Field(
        default=1.0, gt=0, description="seconds before a task is polled (again after each change)"
    )
    max_poll_interval: float = Field(default=30.0, gt=0, description="backoff cap while nothing changes")
    deadline_seconds: float = Field(
        default=1800.0, gt=0, description="unfinished by then: FAILURE (`timed out`) and refund"
    )
    webhook_retry_schedule: list[float] = Field(
        description="seconds after the event of each delivery attempt",
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
        ],
    )
    webhook_timeout: float = Field(
        default=15.0, gt=0, description="seconds per delivery; a delivery in flight is leased 2 x this + 5 s"
    )
    allow_private_webhooks: bool = Field(
        default=False, description="the same as UNIGATE_ALLOW_PRIVATE_WEBHOOKS=1"
    )
    # Longer than any upstream poll takes (a poll outliving it is only a duplicate).
    lease_seconds: float = Field(
        default=20.0,
        gt=0,
        description="seconds a poller holds the tasks it took: a dead replica's tasks resume after it",
    )


class UsageConfig(_Strict):
    """Usage accounting, written off the request path."""

    flush_seconds: float = Field(
        default=1.0,
        gt=0,
        description="usage rows and the request log are written this often (and at shutdown)",
    )


class MusicConfig(_Strict):
    """The music family (Suno's API)."""

    default_model: str = Field(default="chirp-v4", description="the `mv` used when a submit omits it")


class SandboxConfig(_Strict):
    """The offline sandbox provider (see Keeping the sandbox)."""

    enabled: bool = Field(
        default=False,
        description="with a config file, also serve the sandbox's models (a `sandbox` provider and a model "
        "row for each name the file does not define itself); always on without a config file",
    )
    music_seconds: float = Field(default=8.0, gt=0, description="how long a sandbox music task takes")
    task_seconds: float = Field(
        default=4.0, gt=0, description="how long a sandbox video, sound effect, lip sync or visual task takes"
    )


class MediaConfig(_Strict):
    """Model ids for media calls whose request names none."""

    default_image_model: str = Field(default="sandbox-image", description="/v1/images/* without `model`")
    fish_tts_model: str = Field(default="s1", description="/fish/v1/tts without a `model` header")
    fish_asr_model: str = Field(default="fish-asr", description="/fish/v1/asr (Fish's ASR takes no model)")
    sd3_model: str = Field(default="sd3.5-large", description="stable-image/generate/sd3 without `model`")
    default_video_model: str = Field(default="sora-2", description="/v1/videos without `model`")
    lip_sync_model: str = Field(
        default="lip-sync", description="/ent/v2/lip-sync (Vidu's lip sync takes no model)"
    )


class ResponsesConfig(_Strict):
    """The Responses API's stored responses (`POST /v1/responses` with `store`, the default)."""

    retention_days: float = Field(
        default=30.0, ge=0, allow_inf_nan=False, description="purged hourly once older; 0: kept until deleted"
    )
    background_lease_seconds: float = Field(
        default=30.0,
        ge=3,
        le=3600,
        description="a background run's lease, renewed while it runs: a dead worker's response is run "
        "again elsewhere after it lapses (read at start)",
    )
    # Decided before any turn is loaded.
    max_context_bytes: int = Field(
        default=16 * MiB,
        gt=0,
        description="largest conversation `previous_response_id` rebuilds (every earlier turn), in bytes "
        "of stored JSON; 400 `context_too_large` beyond",
    )
    max_context_tokens: int = Field(default=2_000_000, gt=0, description="the same in tokens")


class BatchesConfig(_Strict):
    """Batches the gateway runs itself (`/v1/batches`, `/v1/messages/batches`; see Batches). Read
    at start."""

    concurrency: int = Field(default=16, ge=1, le=1024, description="lines of one batch in flight at once")
    max_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="the share of a key's rpm and tpm its batches may use, and of a model's own rpm and "
        "tpm (across all keys); the rest stays for direct calls",
    )
    max_attempts: int = Field(
        default=5, ge=1, le=50, description="attempts per line, for 429s, 5xx and unreachable upstreams"
    )
    retry_seconds: float = Field(
        default=0.5,
        gt=0,
        le=600,
        description="first backoff between attempts, doubled each time (capped at 60 s; a Retry-After wins)",
    )
    lease_seconds: float = Field(
        default=30.0,
        ge=3,
        le=3600,
        description="a running batch's lease; a dead worker's batch resumes elsewhere after it",
    )
    max_lines: int = Field(default=50_000, ge=1, le=1_000_000, description="requests one batch may hold")


class FilesConfig(_Strict):
    """The Files API (`/v1/files`): uploads streamed to the file store (`storage`)."""

    # The size check happens before the body is read when the upload says its size.
    max_bytes: int = Field(default=512 * MiB, gt=0, description="bytes of one uploaded file; 413 beyond")
    retention_days: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="days until a file expires when its purpose has no expiry of its own (batch files "
        "expire after 30 days, as on OpenAI) and the upload sets none; 0: kept until deleted",
    )


class StorageConfig(_Strict):
    """Where the files the gateway serves (`/media/`) and the sandbox's jobs live: the data
    dir (`local`, one machine) or an S3-compatible bucket every replica shares (`s3`).
    Credentials come from the standard AWS variables (AWS_ACCESS_KEY_ID, ...), never from here."""

    backend: Literal["local", "s3"] = Field(
        default="local",
        description="`local`: the data dir; `s3`: an S3-compatible bucket every replica shares "
        "(needs the `s3` extra; the keys below are for s3 only)",
    )
    bucket: str = Field(default="", description="the bucket's name")
    prefix: str = Field(default="", description="a folder in the bucket for this gateway's objects (`prod/`)")
    endpoint_url: str | None = Field(
        default=None, description="MinIO, R2, Ceph...; unset: AWS S3 in `region`"
    )
    region: str | None = Field(
        default=None, description="unset: AWS_REGION / AWS_DEFAULT_REGION, else us-east-1"
    )
    path_style: bool = Field(
        default=False, description="`endpoint/bucket/key` URLs (MinIO and most S3-compatible servers)"
    )

    @model_validator(mode="after")
    def _check_s3(self) -> StorageConfig:
        if self.backend == "local":
            # Values, not keys: a dumped default config writes every key at its default.
            fields = type(self).model_fields
            extra = [k for k in fields if k != "backend" and getattr(self, k) != fields[k].default]
            if extra:
                raise ValueError(f"{', '.join(extra)}: only for backend s3 (set storage.backend: s3)")
            return self
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", self.bucket):
            raise ValueError(
                "bucket: backend s3 needs the bucket's name (3-63 lowercase letters, digits, . or -)"
            )
        if self.prefix.startswith("/") or "//" in self.prefix or ".." in self.prefix.split("/"):
            raise ValueError("prefix: a relative folder such as `unigate/` (no leading /, // or ..)")
        if self.endpoint_url is not None:
            from urllib.parse import urlsplit

            parts = urlsplit(self.endpoint_url)
            if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
                raise ValueError(f"endpoint_url: {self.endpoint_url!r} is not an http(s):// URL with a host")
        return self


class GatewayConfig(_Strict):
    """The config file's top level: the sections below, and these keys."""

    providers: list[ProviderConfig] = Field(default_factory=list)
    models: list[ModelConfig] = Field(default_factory=list)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    usage: UsageConfig = Field(default_factory=UsageConfig)
    music: MusicConfig = Field(default_factory=MusicConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    media: MediaConfig = Field(default_factory=MediaConfig)
    responses: ResponsesConfig = Field(default_factory=ResponsesConfig)
    files: FilesConfig = Field(default_factory=FilesConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    batches: BatchesConfig = Field(default_factory=BatchesConfig)
    public_url: str | None = Field(
        default=None,
        description="the gateway's base URL as clients reach it (`https://gw.example.com`), for links to "
        "the files it serves; unset: the address the server is bound to, never the Host header "
        "(see Public URL)",
    )
    hosted_tools: Literal["drop", "reject"] = Field(
        default="drop",
        description="a hosted tool (file search, code execution...) a translated route's upstream cannot "
        "run: `drop` it, named in x-unigate-dropped-fields, or `reject` the call with 400",
    )

    @field_validator("public_url")
    @classmethod
    def _check_public_url(cls, value: str | None) -> str | None:
        return None if value is None else check_public_url(value)

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
        for key, value, explicit in defaults(self):
            if explicit and not self.defines(value):
                raise ValueError(
                    f"{key}: no model {value!r} is defined; add it under `models` (or enable "
                    "`sandbox`, whose models include it) or point this key at a defined model"
                )
        return self

    def defines(self, name: str) -> bool:
        """Whether a request for `name` finds a model (exact or glob)."""
        return any(m.name == name or fnmatch.fnmatchcase(name, m.name) for m in self.models)


def check_public_url(value: str) -> str:
    """`value` as the gateway's public base URL (config `public_url`, `UNIGATE_PUBLIC_URL`):
    http or https, a host, no credentials, query or fragment; any trailing slash removed. A
    ValueError says what is wrong."""
    from urllib.parse import urlsplit

    if not value.isprintable() or any(ch.isspace() for ch in value):
        raise ValueError(f"{value!r} has spaces or control characters")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number in range
    except ValueError:
        raise ValueError(f"{value!r} has an invalid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{value!r} must not carry a user or password")
    if "?" in value or "#" in value:
        raise ValueError(f"{value!r} must not have a query or fragment")
    return value.rstrip("/")


def defaults(config: GatewayConfig) -> list[tuple[str, str, bool]]:
    """The model ids used when a request names none: (config key, value, set in the file)."""
    out = [
        ("music.default_model", config.music.default_model, "default_model" in config.music.model_fields_set)
    ]
    media = config.media
    for name in MediaConfig.model_fields:
        out.append((f"media.{name}", getattr(media, name), name in media.model_fields_set))
    return out


def model_family(model: ModelConfig) -> Family:
    """The family a model is listed under: its `family` (which loading fills in from an
    installed provider plugin's models, see `_with_plugin_families`), else text (what most
    configured models are)."""
    return model.family if model.family is not None else "text"
