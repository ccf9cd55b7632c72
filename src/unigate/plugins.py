"""Provider plugins: distributions that add a protocol to the gateway through the
`unigate.providers` entry point group, named after the protocol (the offline sandbox,
distribution `unigate-sandbox` in packages/, is one).

Core never imports a plugin's package by name: it asks the installed distributions' metadata
for the entry point, and the object it names tells what core needs before any request: the
protocol, the models the plugin serves by default with each one's key family (for the default
config, `sandbox.enabled` and `/v1/models`), and, only when a provider of that protocol is
built, its `Provider` class (providers/registry.py checks it is one).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Protocol

GROUP = "unigate.providers"
SANDBOX = "sandbox"  # the plugin without a config file serves every family offline
# What to install for a plugin the project ships, named in start-up errors.
INSTALL_HINTS: Mapping[str, str] = {SANDBOX: "pip install 'unigate[sandbox]'"}


class ProviderPlugin(Protocol):
    """What a plugin's entry point names."""

    @property
    def protocol(self) -> str:
        """The `protocol` a config's provider row names."""
        ...

    @property
    def models(self) -> Mapping[str, str]:
        """The models it serves by default (model id -> key family: text, image, audio,
        music, video or visual)."""
        ...

    def provider_class(self) -> type:
        """The adapter class, imported only when a provider of this protocol is built."""
        ...


class PluginError(Exception):
    """An installed plugin that cannot be loaded: one line naming it."""


def find_plugin(protocol: str) -> ProviderPlugin | None:
    """The installed plugin for `protocol`, or None."""
    for entry in entry_points(group=GROUP, name=protocol):
        try:
            plugin: ProviderPlugin = entry.load()
        except Exception as exc:  # a broken install: say which, not a traceback
            raise PluginError(
                f"the {protocol!r} provider plugin ({entry.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return plugin
    return None


def installed_protocols() -> list[str]:
    """The protocols installed plugins add (for error messages)."""
    return sorted({entry.name for entry in entry_points(group=GROUP)})


def model_families() -> dict[str, str]:
    """The key family of every model an installed plugin serves by default, by model id."""
    families: dict[str, str] = {}
    for protocol in installed_protocols():
        plugin = find_plugin(protocol)
        if plugin is not None:
            families.update(plugin.models)
    return families
