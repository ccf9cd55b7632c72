"""Reading the configuration file: bytes to plain data, refusing what no gateway config needs
and a hostile file would use, so that a bad file is one `ConfigError` naming the file, where
and the fix, never a hang, a memory blow-up or a traceback.

- At most `MAX_CONFIG_BYTES` are read (a real config is a few KB).
- The bytes must be UTF-8; the first invalid byte is named by its offset.
- YAML anchors and aliases are refused where the parser meets them (`&name`, `*name`, so `<<:
  *name` too): nothing is ever expanded, so an alias bomb costs no more than its own text.
- Collections nest at most `MAX_DEPTH` deep (composing is recursive; 100k `[` would exhaust the
  stack), and a number has at most `MAX_NUMBER_CHARS` characters (YAML 1.1 reads `1:2:3...` as a
  base-60 integer, which takes quadratic time to build).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import Node, ScalarNode

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100


class ConfigError(Exception):
    """The configuration file cannot be used; the message says where and why."""


def read_yaml(path: Path) -> Any:
    """The file's YAML document as plain data (None for an empty file)."""
    text = _decoded(_read(path), path)
    try:
        return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader, with less allowed
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {_where(exc)}") from None


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path} is larger than the 1 MiB ({MAX_CONFIG_BYTES:,} bytes) limit for a "
            "config file; point UNIGATE_CONFIG / --config at the gateway's YAML file"
        )
    return data


def _decoded(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset "
            f"{exc.start} is invalid; save the file as UTF-8"
        ) from None


def _where(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: what is wrong and its line and column."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = exc.problem or exc.context or "invalid YAML"
        return f"line {mark.line + 1}, column {mark.column + 1}: {' '.join(problem.split())}"
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):  # its code point
        return f"character U+{exc.character:04X} at character offset {exc.position} is not allowed in YAML"
    return " ".join(str(exc).split())


class _ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases, with bounded nesting and numbers."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _refused("aliases (*name) are not allowed in a config file; write the value out", event)
        if getattr(event, "anchor", None) is not None:
            raise _refused("anchors (&name) are not allowed in a config file; write the value out", event)
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _refused(f"nested deeper than {MAX_DEPTH} levels", event)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_bounded_int(self, node: Node) -> int:
        _check_number(node)
        return int(self.construct_yaml_int(node))  # type: ignore[arg-type]

    def construct_bounded_float(self, node: Node) -> float:
        _check_number(node)
        return float(self.construct_yaml_float(node))  # type: ignore[arg-type]


def _refused(problem: str, event: yaml.Event) -> ComposerError:
    mark = event.start_mark
    return ComposerError(None, None, problem, mark if isinstance(mark, yaml.Mark) else None)


def _check_number(node: Node) -> None:
    if isinstance(node, ScalarNode) and len(str(node.value)) > MAX_NUMBER_CHARS:
        raise ConstructorError(
            None, None, f"a number longer than {MAX_NUMBER_CHARS} characters", node.start_mark
        )


_ConfigLoader.add_constructor("tag:yaml.org,2002:int", _ConfigLoader.construct_bounded_int)
_ConfigLoader.add_constructor("tag:yaml.org,2002:float", _ConfigLoader.construct_bounded_float)
