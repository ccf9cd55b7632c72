"""Protocol name -> adapter class. Adding a protocol is one line here and one module; a
protocol from another distribution (the sandbox) comes through its provider plugin
(unigate/plugins.py) instead, and is looked up only when no built-in protocol has the name."""

from __future__ import annotations

from unigate.config import ProviderConfig
from unigate.plugins import INSTALL_HINTS, find_plugin, installed_protocols
from unigate.providers.anthropic.messages import AnthropicProvider
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.google.gemini import GeminiProvider
from unigate.providers.media.fish import FishProvider
from unigate.providers.media.stability import StabilityProvider
from unigate.providers.openai.azure import AzureOpenAIProvider
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.providers.tasks.kling import KlingProvider
from unigate.providers.tasks.picwish import PicWishProvider
from unigate.providers.tasks.suno import SunoProvider
from unigate.providers.tasks.vidu import ViduProvider

PROTOCOLS: dict[str, type[Provider]] = {
    AnthropicProvider.protocol: AnthropicProvider,
    AzureOpenAIProvider.protocol: AzureOpenAIProvider,
    FishProvider.protocol: FishProvider,
    StabilityProvider.protocol: StabilityProvider,
    GeminiProvider.protocol: GeminiProvider,
    OpenAIProvider.protocol: OpenAIProvider,
    SunoProvider.protocol: SunoProvider,
    KlingProvider.protocol: KlingProvider,
    ViduProvider.protocol: ViduProvider,
    PicWishProvider.protocol: PicWishProvider,
}


class UnknownProtocol(ValueError):
    pass


def build_provider(config: ProviderConfig, context: ProviderContext) -> Provider:
    return provider_class(config)(config, context)


def provider_class(config: ProviderConfig) -> type[Provider]:
    cls = PROTOCOLS.get(config.protocol)
    if cls is not None:
        return cls
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
