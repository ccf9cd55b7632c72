"""The sandbox as a unigate provider plugin (entry point group `unigate.providers`, name
`sandbox`): what core reads before it builds a provider, without importing the sandbox's
modules, which load only with `provider_class()`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from unigate.providers.base import Provider
from unigate_sandbox.models import KIND_FAMILY, PROTOCOL, SANDBOX_MODELS


class SandboxPlugin:
    protocol = PROTOCOL
    # Each default model's key family, which /v1/models and key permissions go by.
    models: Mapping[str, str] = MappingProxyType(
        {name: KIND_FAMILY[kind] for name, kind in SANDBOX_MODELS.items()}
    )

    def provider_class(self) -> type[Provider]:
        from unigate_sandbox.provider import SandboxProvider

        return SandboxProvider


PLUGIN = SandboxPlugin()
