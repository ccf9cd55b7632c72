"""Provider plugins (unigate/plugins.py): core finds the sandbox through its entry point and
never imports it; without it, the configuration says in one line what to install or give."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from unigate import plugins
from unigate.config import ConfigError, Family, ProviderConfig
from unigate.config_source import load_config
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.registry import PROTOCOLS, UnknownProtocol, build_provider

CORE = Path(__file__).resolve().parents[2] / "src" / "unigate"
INSTALL = "pip install 'unigate[sandbox]'"


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_never_imports_the_sandbox() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 100
    importing = [
        str(f.relative_to(CORE))
        for f in files
        if any(n.split(".")[0] == "unigate_sandbox" for n in _imported(f))
        or "unigate_sandbox" in f.read_text()
    ]
    assert importing == []


def test_the_sandbox_is_found_through_its_entry_point(tmp_path: Path) -> None:
    plugin = plugins.find_plugin("sandbox")
    assert plugin is not None and plugin.protocol == "sandbox"
    assert "sandbox" not in PROTOCOLS, "not a built-in protocol"
    assert set(plugin.models.values()) <= set(get_args(Family))
    assert plugin.models["sandbox-chat"] == "text" and plugin.models["sora-2"] == "video"
    provider = build_provider(ProviderConfig(name="sandbox", protocol="sandbox"), ProviderContext(tmp_path))
    assert isinstance(provider, Provider) and provider.protocol == "sandbox"


@pytest.fixture
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if no provider plugin (the sandbox) were installed."""
    monkeypatch.setattr(plugins, "entry_points", lambda **_: [])


@pytest.mark.usefixtures("no_plugins")
def test_without_the_sandbox_the_default_config_needs_a_provider() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(None, {})
    message = str(refused.value)
    assert message.startswith("no providers") and INSTALL in message and "--config" in message
    assert "\n" not in message
    config = load_config(None, {"OPENAI_API_KEY": "sk-x"})
    assert [p.protocol for p in config.providers] == ["openai"] and not config.sandbox.enabled


@pytest.mark.usefixtures("no_plugins")
def test_without_the_sandbox_a_file_serves_its_own_models(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "providers: [{name: o, protocol: openai, base_url: 'http://x'}]\n"
        "models: [{name: sora-2, routes: [{provider: o}]}]\n"
    )
    config = load_config(path, {})
    assert [(m.name, m.family) for m in config.models] == [("sora-2", None)]
    path.write_text(path.read_text() + "sandbox: {enabled: true}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path, {})
    assert str(refused.value) == (
        f"config file {path}: sandbox.enabled: the sandbox is not installed; {INSTALL}, "
        "or remove sandbox.enabled"
    )


@pytest.mark.usefixtures("no_plugins")
def test_a_sandbox_provider_without_the_sandbox_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UnknownProtocol, match=r"unknown protocol 'sandbox' \(known: .*\); pip install"):
        build_provider(ProviderConfig(name="s", protocol="sandbox"), ProviderContext(tmp_path))
