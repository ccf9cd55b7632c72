"""Config loading: schema, ${ENV} interpolation, unknown keys named with their file."""

from __future__ import annotations

from pathlib import Path

import pytest

from unigate.config import ConfigError, load_config

GOOD = """
providers:
  - name: main
    protocol: openai
    base_url: ${BASE:-https://api.example.com/v1}
    api_key: ${KEY}
    read_timeout: 12
models:
  - name: gpt-x
    routes:
      - {provider: main, model: upstream-x, priority: 0, weight: 2, connect_timeout: 1}
routing: {cooldown_after_failures: 5, cooldown_seconds: 9}
limits: {max_json_body: 1000}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    return path


def test_good_config_with_interpolation(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, GOOD), {"KEY": "sk-live"})
    provider = cfg.providers[0]
    assert provider.api_key == "sk-live" and provider.base_url == "https://api.example.com/v1"
    assert provider.read_timeout == 12 and provider.connect_timeout == 5
    assert cfg.models[0].routes[0].weight == 2 and cfg.routing.cooldown_after_failures == 5
    assert cfg.limits.max_json_body == 1000


def test_unknown_key_named_with_file(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("read_timeout: 12", "read_timout: 12"))
    with pytest.raises(ConfigError) as info:
        load_config(path, {"KEY": "k"})
    assert "providers[0].read_timout: unknown key" in str(info.value) and str(path) in str(info.value)


def test_unknown_top_level_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="colour: unknown key"):
        load_config(_write(tmp_path, GOOD + "colour: blue\n"), {"KEY": "k"})


def test_hosted_tools_policy(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, GOOD), {"KEY": "k"}).hosted_tools == "drop"
    assert (
        load_config(_write(tmp_path, GOOD + "hosted_tools: reject\n"), {"KEY": "k"}).hosted_tools == "reject"
    )
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, GOOD + "hosted_tools: refuse\n"), {"KEY": "k"})
    assert "hosted_tools" in str(info.value) and "'drop' or 'reject'" in str(info.value)


def test_web_search_is_an_openai_setting(tmp_path: Path) -> None:
    searching = GOOD.replace("read_timeout: 12", "read_timeout: 12\n    web_search: always")
    assert load_config(_write(tmp_path, searching), {"KEY": "k"}).providers[0].web_search == "always"
    other = searching.replace("protocol: openai", "protocol: anthropic")
    with pytest.raises(ConfigError, match="web_search: is for `openai` and `azure` providers only"):
        load_config(_write(tmp_path, other), {"KEY": "k"})


def test_missing_env_var_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KEY is not set"):
        load_config(_write(tmp_path, GOOD), {})


def test_route_to_unknown_provider(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown provider 'ghost'"):
        load_config(_write(tmp_path, GOOD.replace("{provider: main", "{provider: ghost")), {"KEY": "k"})


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "providers: [\n"), {})
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml", {})


def test_default_config_is_sandbox_plus_env_vendors() -> None:
    cfg = load_config(None, {})
    assert [p.protocol for p in cfg.providers] == ["sandbox"]
    assert {m.name for m in cfg.models} >= {"sandbox-chat", "sandbox-embedding"}
    with_openai = load_config(None, {"OPENAI_API_KEY": "sk-x"})
    assert any(p.protocol == "openai" and p.api_key == "sk-x" for p in with_openai.providers)
