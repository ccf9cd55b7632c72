"""Protocol name -> adapter class. Adding a protocol is one line here and one module."""

from __future__ import annotations

from unigate.config import ProviderConfig
from unigate.providers.anthropic.messages import AnthropicProvider
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.google.gemini import GeminiProvider
from unigate.providers.media.fish import FishProvider
from unigate.providers.media.stability import StabilityProvider
from unigate.providers.openai.azure import AzureOpenAIProvider
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.providers.sandbox import SandboxProvider
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
    SandboxProvider.protocol: SandboxProvider,
    SunoProvider.protocol: SunoProvider,
    KlingProvider.protocol: KlingProvider,
    ViduProvider.protocol: ViduProvider,
    PicWishProvider.protocol: PicWishProvider,
}


class UnknownProtocol(ValueError):
    pass


def build_provider(config: ProviderConfig, context: ProviderContext) -> Provider:
    cls = PROTOCOLS.get(config.protocol)
    if cls is None:
        known = ", ".join(sorted(PROTOCOLS))
        raise UnknownProtocol(
            f"provider {config.name!r}: unknown protocol {config.protocol!r} (known: {known})"
        )
    return cls(config, context)
