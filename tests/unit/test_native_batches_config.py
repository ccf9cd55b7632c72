"""The per-provider `batches: native | gateway` key: accepted on the protocols whose vendor has
a batch API (openai, azure on its v1 surface, anthropic), refused elsewhere with the provider
and the fix named, and `Provider.native_batches()` answering an adapter only when configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from unigate.config import ConfigError, ProviderConfig
from unigate.config_source import load_config
from unigate.providers.anthropic.batches import AnthropicBatches
from unigate.providers.base import ProviderContext
from unigate.providers.openai.batches import OpenAIBatches
from unigate.providers.registry import build_provider


def _load(tmp_path: Path, provider: str) -> ProviderConfig:
    path = tmp_path / "gw.yaml"
    path.write_text(f"providers:\n  - {provider}\nmodels: []\n")
    return load_config(path, {}).providers[0]


def test_the_default_is_gateway_everywhere(tmp_path: Path) -> None:
    assert _load(tmp_path, "{name: a, protocol: openai}").batches == "gateway"
    # A dumped default config writes `gateway` for every provider: that must load.
    assert _load(tmp_path, "{name: a, protocol: gemini, batches: gateway}").batches == "gateway"


@pytest.mark.parametrize("protocol", ["gemini", "suno", "sandbox"])
def test_native_elsewhere_names_the_provider_and_the_fix(tmp_path: Path, protocol: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, f"{{name: vendor-x, protocol: {protocol}, batches: native}}")
    message = str(caught.value)
    assert (
        "providers[0]: provider 'vendor-x': batches: native is for `openai`, `azure` and `anthropic`"
        in message
    )
    assert "set batches: gateway" in message
    assert "\n" not in message.strip()


def test_a_misspelt_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"providers\[0\]\.batches: Input should be 'native' or 'gateway'"):
        _load(tmp_path, "{name: a, protocol: openai, batches: natively}")


def test_azure_needs_its_v1_surface(tmp_path: Path) -> None:
    deployment = "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21"
    with pytest.raises(ConfigError, match=r"batches: native on azure needs base_url .*/openai/v1"):
        _load(tmp_path, f"{{name: az, protocol: azure, batches: native, base_url: '{deployment}'}}")
    v1 = _load(
        tmp_path,
        "{name: az, protocol: azure, batches: native, base_url: 'https://r.openai.azure.com/openai/v1'}",
    )
    assert v1.batches == "native"


@pytest.mark.parametrize(
    ("protocol", "adapter"),
    [("openai", OpenAIBatches), ("azure", OpenAIBatches), ("anthropic", AnthropicBatches)],
)
def test_native_batches_only_when_configured(tmp_path: Path, protocol: str, adapter: type) -> None:
    context = ProviderContext(data_dir=tmp_path)
    plain = build_provider(ProviderConfig(name="a", protocol=protocol), context)
    native = build_provider(ProviderConfig(name="b", protocol=protocol, batches="native"), context)
    assert plain.native_batches() is None
    batches = native.native_batches()
    assert batches is not None and isinstance(batches, adapter)
    assert batches.discount == 0.5


def test_other_providers_have_none(tmp_path: Path) -> None:
    gemini = build_provider(ProviderConfig(name="g", protocol="gemini"), ProviderContext(data_dir=tmp_path))
    assert gemini.native_batches() is None
