"""Protocol name -> adapter class. Adding a protocol is one line here and one module; a
protocol from another distribution (the sandbox) comes through its provider plugin
(unigate/plugins.py) instead, and is looked up only when no built-in protocol has the name."""

from __future__ import annotations

import importlib

from unigate.config import ProviderConfig
from unigate.plugins import INSTALL_HINTS, find_plugin, installed_protocols
from unigate.providers.base import Provider, ProviderContext

# protocol -> the module and class of its adapter, imported when a provider of that protocol is
# built: a worker loads only the adapters its configuration names (each one also brings its
# wire translations; all of them are ~0.5 MB per worker).
PROTOCOLS: dict[str, tuple[str, str]] = {
    "anthropic": ("unigate.providers.anthropic.messages", "AnthropicProvider"),
    "azure": ("unigate.providers.openai.azure", "AzureOpenAIProvider"),
    "fish": ("unigate.providers.media.fish", "FishProvider"),
    "stability": ("unigate.providers.media.stability", "StabilityProvider"),
    "gemini": ("unigate.providers.google.gemini", "GeminiProvider"),
    "openai": ("unigate.providers.openai.compatible", "OpenAIProvider"),
    "suno": ("unigate.providers.tasks.suno", "SunoProvider"),
    "kling": ("unigate.providers.tasks.kling", "KlingProvider"),
    "vidu": ("unigate.providers.tasks.vidu", "ViduProvider"),
    "picwish": ("unigate.providers.tasks.picwish", "PicWishProvider"),
}


def protocol_class(protocol: str) -> type[Provider]:
    """The built-in adapter class of `protocol` (one of PROTOCOLS), imported on first use."""
    module, name = PROTOCOLS[protocol]
    cls: type[Provider] = getattr(importlib.import_module(module), name)
    return cls


class UnknownProtocol(ValueError):
    pass


def build_provider(config: ProviderConfig, context: ProviderContext) -> Provider:
    return provider_class(config)(config, context)


def provider_class(config: ProviderConfig) -> type[Provider]:
    if config.protocol in PROTOCOLS:
        return protocol_class(config.protocol)
    plugin = find_plugin(config.protocol)
    if plugin is None:
        known = ", ".join(sorted({*PROTOCOLS, *installed_protocols()}))
        hint = f"; {INSTALL_HINTS[config.protocol]}" if config.protocol in INSTALL_HINTS else ""
        raise UnknownProtocol(
            f"provider {config.name!r}: unknown protocol {config.protocol!r} (known: {known}){hint}"
        )
    found = plugin.provider_class()
    if not (isinstance(found, type) and issubclass(found, Provider)):
        raise UnknownProtocol(
            f"provider {config.name!r}: the {config.protocol!r} plugin's provider_class() is not a Provider"
        )
    return found
