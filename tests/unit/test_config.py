"""Config loading: schema, ${ENV} interpolation, unknown keys named with their file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from unigate.config import ConfigError
from unigate.config_file import MAX_CONFIG_BYTES
from unigate.config_source import load_config

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


def _laughs(levels: int) -> str:
    """A billion-laughs document: each level an anchored list of nine aliases of the last."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, tuple[bytes, str]] = {
    # name: (file bytes, what the error says)
    "alias bomb": (_laughs(10).encode(), "line 1, column 5: anchors (&name) are not allowed"),
    "alias without anchor": (b"routing: *nowhere\n", "line 1, column 10: aliases (*name) are not allowed"),
    "merge key": (b"routing:\n  <<: *base\n", "line 2, column 7: aliases (*name) are not allowed"),
    "deep flow nesting": (b"providers: " + b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
    "deep block nesting": (
        b"".join(b" " * i + b"k:\n" for i in range(100)) + b" " * 100 + b"v\n",
        "line 65, column 65: nested deeper than 64 levels",
    ),
    "not utf-8": (b"providers: []\n# caf\xe9\n", "is not UTF-8 text: byte 0xe9 at byte offset 19"),
    "over 1 MiB": (b"#" * (1024 * 1024 + 1), "larger than the 1 MiB (1,048,576 bytes) limit"),
    "base-60 integer": (
        b"routing: {cooldown_seconds: " + b":".join([b"1"] * 100_000) + b"}\n",
        "a number longer than 100 characters",
    ),
    "NUL": (b"routing: \x00\n", "character U+0000 at character offset 9 is not allowed"),
    "two documents": (b"routing: {}\n---\nmodels: []\n", "line 2, column 1: but found another document"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_files_are_one_line_errors_found_quickly(tmp_path: Path, name: str) -> None:
    data, problem = HOSTILE[name]
    path = tmp_path / "gw.yaml"
    path.write_bytes(data)
    # CPU time, not wall time: the work done is the point, and a loaded machine stretches the latter.
    started = time.process_time()
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    message = str(info.value)
    assert time.process_time() - started < 2.0, "refused before anything is expanded or built"
    assert problem in message and str(path) in message and "\n" not in message, message


def test_exactly_1_mib_is_read_and_the_error_states_the_limit(tmp_path: Path) -> None:
    padded = GOOD + "#" * (MAX_CONFIG_BYTES - len(GOOD.encode()))
    assert len(padded.encode()) == MAX_CONFIG_BYTES
    assert load_config(_write(tmp_path, padded), {"KEY": "k"}).providers[0].api_key == "k"
    with pytest.raises(ConfigError, match=r"larger than the 1 MiB \(1,048,576 bytes\) limit"):
        load_config(_write(tmp_path, padded + "#"), {"KEY": "k"})


def test_a_model_name_that_is_a_list_is_a_schema_error(tmp_path: Path) -> None:
    text = "sandbox: {enabled: true}\nmodels: [{name: [1], routes: [{provider: sandbox}]}]\n"
    with pytest.raises(ConfigError, match=r"models\[0\].name: Input should be a valid string"):
        load_config(_write(tmp_path, text), {})


def test_a_thousand_errors_are_one_bounded_line(tmp_path: Path) -> None:
    models = "".join(
        f"  - {{name: m{i}, colour: red, routes: [{{provider: sandbox}}]}}\n" for i in range(1000)
    )
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "sandbox: {enabled: true}\nmodels:\n" + models), {})
    message = str(info.value)
    assert "models[0].colour: unknown key" in message and "and 990 more" in message
    assert len(message) < 1000
