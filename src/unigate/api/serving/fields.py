"""Checks of single text values outside a body: the query parameters a router reads (`?limit=`,
`?order=`), always strings, refused with a 400 that names the parameter. Request bodies are
declared in `unigate.shapes` instead."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from unigate.errors import InvalidRequest


def _bad(name: str, expected: str) -> InvalidRequest:
    return InvalidRequest(
        f"Invalid value for '{name}': expected {expected}.", param=name, code="invalid_value"
    )


def choice(
    payload: Mapping[str, Any], name: str, options: Collection[str], default: str | None = None
) -> str | None:
    value = payload.get(name)
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value not in options:
        raise _bad(name, "one of " + ", ".join(sorted(options)))
    return value


def integer(payload: Mapping[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool | float):
        raise _bad(name, f"an integer from {lo} to {hi}")
    try:
        parsed = int(value)
    except (TypeError, ValueError):
        raise _bad(name, f"an integer from {lo} to {hi}") from None
    if not lo <= parsed <= hi:
        raise _bad(name, f"an integer from {lo} to {hi}")
    return parsed
