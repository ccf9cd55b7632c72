"""Where the configuration comes from: the YAML file (with `${ENV}` interpolation, the sandbox
and plugin families filled in, and validation errors described as one line naming the file), or,
without a file, the built-in default: the sandbox plus the vendors whose keys are in the
environment. The schema itself is `config.py`'s.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from unigate.config import Family, GatewayConfig
from unigate.config_file import ConfigError, read_yaml
from unigate.plugins import INSTALL_HINTS, SANDBOX, find_plugin, model_families

_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class EnvVendor:
    """A vendor that becomes a provider, without a config file, when its key is in the
    environment: `keys` and `base_urls` are the variables its own SDK reads (the first one set
    wins), `routes` the model ids (globs) sent to it, `well_known` the models it is listed
    with when its upstream lists none or cannot be reached, `families` which of them are not
    text (globs)."""

    protocol: str
    keys: tuple[str, ...]
    base_urls: tuple[str, ...]
    base_url: str
    routes: tuple[str, ...]
    well_known: tuple[str, ...]
    families: tuple[tuple[str, Family], ...] = ()

    def family(self, model: str) -> Family | None:
        return next((f for glob, f in self.families if fnmatch.fnmatchcase(model, glob)), None)


# What the configuration reference says of the vendor keys (its environment table's last row).
ENV_VENDORS_MEANING = (
    "without a config file, each adds its vendor's provider and routes the vendor's model ids to it: "
    "the variables, the models they route and the start-up check are on "
    "[Connecting providers](providers.md#vendor-keys)"
)
ENV_VENDORS: dict[str, EnvVendor] = {
    "openai": EnvVendor(
        "openai",
        ("OPENAI_API_KEY",),
        ("OPENAI_BASE_URL",),
        "https://api.openai.com/v1",
        ("gpt-*", "o1*", "o3*", "o4*", "chatgpt-*", "text-embedding-*", "whisper-*", "tts-*", "dall-e-*",
         "omni-moderation-*", "text-moderation-*"),
        ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini", "text-embedding-3-small",
         "text-embedding-3-large", "whisper-1", "tts-1", "gpt-image-1", "dall-e-3"),
        (("dall-e-*", "image"), ("gpt-image-*", "image"), ("whisper-*", "audio"), ("tts-*", "audio"),
         ("*-tts", "audio"), ("*-transcribe", "audio"), ("sora-*", "video")),
    ),
    "anthropic": EnvVendor(
        "anthropic",
        ("ANTHROPIC_API_KEY",),
        ("ANTHROPIC_BASE_URL",),
        "https://api.anthropic.com",
        ("claude-*",),
        ("claude-opus-4-1", "claude-sonnet-4-5", "claude-3-5-haiku-latest"),
    ),
    "gemini": EnvVendor(
        "gemini",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        ("GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"),
        "https://generativelanguage.googleapis.com",
        ("gemini-*",),
        ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.0-flash"),
        (("imagen-*", "image"), ("*-image*", "image"), ("*-tts", "audio"), ("veo-*", "video")),
    ),
    "stability": EnvVendor(
        "stability",
        ("STABILITY_API_KEY",),
        ("STABILITY_BASE_URL",),
        "https://api.stability.ai",
        ("stable-image-*", "sd3*"),
        ("stable-image-ultra", "stable-image-core", "sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium"),
        (("*", "image"),),
    ),
    "fish": EnvVendor(
        "fish", ("FISH_API_KEY",), ("FISH_BASE_URL",), "https://api.fish.audio", (), ("s1", "fish-asr"),
        (("*", "audio"),),
    ),
    "vidu": EnvVendor(
        "vidu",
        ("VIDU_API_KEY",),
        ("VIDU_BASE_URL",),
        "https://api.vidu.com",
        ("vidu*",),
        ("viduq1", "vidu2.0", "audio1.0", "lip-sync"),
        (("audio1.0", "audio"), ("lip-sync", "audio"), ("*", "video")),
    ),
    "picwish": EnvVendor(
        "picwish",
        ("PICWISH_API_KEY",),
        ("PICWISH_BASE_URL",),
        "https://techhk.aoscdn.com",
        ("picwish/*",),
        ("picwish/segmentation", "picwish/inpaint", "picwish/scale", "picwish/ocr"),
        (("*", "visual"),),
    ),
}  # fmt: skip


def env_vendors(env: Mapping[str, str]) -> list[tuple[str, EnvVendor, str, str]]:
    """(name, vendor, key, base URL) of each vendor whose key is in `env`."""
    found = []
    for name, vendor in ENV_VENDORS.items():
        key = next((env[k] for k in vendor.keys if env.get(k)), "")
        if key:
            base = next((env[v] for v in vendor.base_urls if env.get(v)), vendor.base_url)
            found.append((name, vendor, key, base))
    return found


def default_config(
    env_credentials: Mapping[str, str], listed: Mapping[str, list[str]] | None = None
) -> GatewayConfig:
    """The configuration used when no file is given: the sandbox for every family (when it is
    installed), plus real vendors whose credentials are present in the environment, each with
    the models its upstream listed (`listed`, by provider name: `providers/discovery.py`) or
    else its well-known ones. A vendor's model wins over a sandbox model of the same name, or
    one its route globs match (with OPENAI_API_KEY, `omni-moderation-latest` is OpenAI's even
    when the upstream's list could not be read)."""
    sandbox = find_plugin(SANDBOX)
    providers: list[dict[str, Any]] = []
    models: list[dict[str, Any]] = []
    for name, vendor, key, base in env_vendors(env_credentials):
        providers.append({"name": name, "protocol": vendor.protocol, "base_url": base, "api_key": key})
        route = [{"provider": name}]
        defined = {m["name"] for m in models}
        ids = (listed or {}).get(name) or vendor.well_known
        for model in dict.fromkeys(ids):
            if model not in defined:
                family = vendor.family(model)
                models.append({"name": model, "routes": route, **({"family": family} if family else {})})
        models.extend({"name": glob, "routes": route} for glob in vendor.routes if glob not in defined)
    if sandbox is not None:
        providers.insert(0, {"name": SANDBOX, "protocol": SANDBOX})
        defined = {m["name"] for m in models}
        models.extend(
            {"name": n, "routes": [{"provider": SANDBOX}]}
            for n in sandbox.models
            if not any(fnmatch.fnmatchcase(n, name) for name in defined)
        )
    if not providers:
        raise ConfigError(
            "no providers: without a config file the gateway serves the offline sandbox, which is not "
            f"installed; {INSTALL_HINTS[SANDBOX]}, or give a config file (--config or UNIGATE_CONFIG)"
        )
    data = {"providers": providers, "models": models, "sandbox": {"enabled": sandbox is not None}}
    try:
        return GatewayConfig.model_validate(_with_plugin_families(data))
    except ValidationError as exc:
        raise ConfigError(
            f"without a config file, from the environment: {_describe_errors(exc)}; fix the vendor's "
            "*_BASE_URL variable"
        ) from None


def load_config(
    path: Path | None, env: Mapping[str, str] | None = None, listed: Mapping[str, list[str]] | None = None
) -> GatewayConfig:
    """The configuration in the file at `path` (the built-in one for None), or a ConfigError.
    The one place the file is read and parsed: start-up, reload and the CLI all come here.
    Blocking (file I/O and parsing): the event loop calls it in a thread."""
    env = os.environ if env is None else env
    if path is None:
        return default_config(env, listed)
    raw = read_yaml(path)  # bounded size, UTF-8, no aliases, bounded depth (config_file.py)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping")
    data = _with_plugin_families(_with_sandbox(_interpolate(raw, env, path, ""), path))
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None


@dataclass(frozen=True)
class LoadedConfig:
    """A configuration as one process loaded it, with what it was loaded from. The server
    process loads it before forking its workers (cli/launch.py), and a worker whose file and
    environment still hold exactly that takes it (`current`) instead of parsing and validating
    the file again: the worker then does not run the validator's compiled code at start, whose
    pages it would otherwise map as its own (0.6-2.5 MB of resident memory a worker, the more
    the more of the library the page cache holds, as right after an install). A worker started
    later (one replacing a worker that died) after the file changed loads the file itself."""

    path: Path | None
    # The file's bytes (read before it was parsed) and the environment hold credentials: never
    # in a repr.
    text: bytes | None = field(repr=False)
    environ: dict[str, str] = field(repr=False)
    config: GatewayConfig = field(repr=False)

    @classmethod
    def load(cls, path: Path | None, env: Mapping[str, str] | None = None) -> LoadedConfig:
        """`load_config(path, env)`, or its ConfigError."""
        environ = dict(os.environ if env is None else env)
        # Read first: a file changed while it is parsed then reads as changed to `current`,
        # never the other way round (newer bytes taken for an older parse).
        text = _current_text(path)
        return cls(path, text, environ, load_config(path, environ))

    def current(self, path: Path | None, env: Mapping[str, str] | None = None) -> GatewayConfig | None:
        """The configuration, when `load_config(path, env)` would load it again now; else None."""
        if path != self.path or dict(os.environ if env is None else env) != self.environ:
            return None
        if path is None:
            return self.config
        text = _current_text(path)
        return self.config if text is not None and text == self.text else None


def _current_text(path: Path | None) -> bytes | None:
    """The config file's bytes (None without a file, or when it cannot be read)."""
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _with_sandbox(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """`sandbox: {enabled: true}`: the `sandbox` provider and the sandbox's models added beside
    the file's own (a model the file defines keeps its definition). Malformed sections are
    left for validation to report."""
    sandbox, providers, models = data.get("sandbox"), data.get("providers") or [], data.get("models") or []
    if not (isinstance(sandbox, dict) and sandbox.get("enabled") is True):
        return data
    plugin = find_plugin(SANDBOX)
    if plugin is None:
        raise ConfigError(
            f"config file {path}: sandbox.enabled: the sandbox is not installed; {INSTALL_HINTS[SANDBOX]}, "
            "or remove sandbox.enabled"
        )
    if not isinstance(providers, list) or not isinstance(models, list):
        return data
    named = next((p for p in providers if isinstance(p, dict) and p.get("name") == SANDBOX), None)
    if named is None:
        providers = [*providers, {"name": SANDBOX, "protocol": SANDBOX}]
    elif named.get("protocol") != SANDBOX:
        raise ConfigError(
            f"config file {path}: sandbox.enabled: the provider name 'sandbox' is taken by a "
            f"{named.get('protocol')!r} provider; rename that provider"
        )
    # Only text names: an unhashable one (a list) is left for validation to report.
    defined = {m.get("name") for m in models if isinstance(m, dict) and isinstance(m.get("name"), str)}
    extra = [{"name": n, "routes": [{"provider": SANDBOX}]} for n in plugin.models if n not in defined]
    return {**data, "providers": providers, "models": [*models, *extra]}


def _with_plugin_families(data: dict[str, Any]) -> dict[str, Any]:
    """A model row without `family` whose name an installed provider plugin serves by default
    takes that model's family (the sandbox's `sora-2` is video, wherever it is routed)."""
    models = data.get("models")
    if not isinstance(models, list) or not models:
        return data
    families = model_families()
    if not families:
        return data

    def filled(model: Any) -> Any:
        name = model.get("name") if isinstance(model, dict) else None
        if isinstance(name, str) and name in families and model.get("family") is None:
            return {**model, "family": families[name]}
        return model

    return {**data, "models": [filled(m) for m in models]}


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


MAX_SHOWN_ERRORS = 10  # a file of a thousand bad entries is still a one-line message


def _describe(exc: ValidationError, path: Path) -> str:
    return f"config file {path}: " + _describe_errors(exc)


def _describe_errors(exc: ValidationError) -> str:
    lines = []
    errors = exc.errors()
    for err in errors[:MAX_SHOWN_ERRORS]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        if err["type"] == "extra_forbidden":
            lines.append(f"{loc}: unknown key")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            lines.append(f"{loc}: {msg}" if loc else msg)
    if len(errors) > MAX_SHOWN_ERRORS:
        lines.append(f"and {len(errors) - MAX_SHOWN_ERRORS} more")
    return "; ".join(lines)
