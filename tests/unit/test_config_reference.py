"""The configuration reference (docs/configuration.md's annotated file) against the declarations
in config.py: every key the gateway takes is shown, no key is shown that it does not take, and
each section's value shown is its default. A key added to config.py without its line in the
reference, or a default changed in one place only, fails here."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from unigate.config import GatewayConfig, load_config

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# Values the example sets on purpose, not the defaults: an optional URL, an enabled sandbox.
EXAMPLE_VALUES = {"config.sandbox.enabled"}


def _reference() -> dict[str, Any]:
    """The page's first YAML block, its commented-out keys (`# key: value`) taken as set."""
    match = re.search(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
    assert match, "docs/configuration.md has no yaml block"
    lines = [re.sub(r"^(\s*)# ([a-z_]+:)", r"\1\2", line) for line in match.group(1).splitlines()]
    loaded = yaml.safe_load("\n".join(lines))
    assert isinstance(loaded, dict)
    return loaded


def _nested(annotation: Any) -> type[BaseModel] | None:
    """The section model a field holds (itself, in a list, or optional), if any."""
    pending = [annotation]
    while pending:
        arg = pending.pop()
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
        pending.extend(typing.get_args(arg))
    return None


def _compare(model: type[BaseModel], shown: dict[str, Any] | list[Any], where: str, found: list[str]) -> None:
    entries = shown if isinstance(shown, list) else [shown]
    keys = {key for entry in entries for key in entry}
    fields = {field.alias or name: field for name, field in model.model_fields.items()}
    found.extend(f"{where}.{key}: not in the reference" for key in sorted(set(fields) - keys))
    found.extend(f"{where}.{key}: shown but not a key" for key in sorted(keys - set(fields)))
    for name, field in fields.items():
        values = [entry[name] for entry in entries if name in entry]
        section = _nested(field.annotation)
        if section is not None:
            flat = [v for value in values for v in (value if isinstance(value, list) else [value])]
            if flat:
                _compare(section, flat, f"{where}.{name}", found)
        elif not isinstance(shown, list) and values and f"{where}.{name}" not in EXAMPLE_VALUES:
            default = field.get_default(call_default_factory=True)
            if default is not None and values[0] != default:
                found.append(f"{where}.{name}: shown {values[0]!r}, default {default!r}")


def test_the_reference_shows_every_key_and_its_default() -> None:
    found: list[str] = []
    _compare(GatewayConfig, _reference(), "config", found)
    assert found == []


def test_the_reference_is_a_config_the_gateway_loads(tmp_path: Path) -> None:
    # The example as written (its commented-out keys left out), read as `--config` reads it.
    match = re.search(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
    assert match
    path = tmp_path / "gateway.yaml"
    path.write_text(match.group(1))
    config = load_config(path, {"OPENAI_API_KEY": "sk-a", "TOGETHER_API_KEY": "sk-b"})
    assert [p.name for p in config.providers][:2] == ["main-openai", "backup"]
