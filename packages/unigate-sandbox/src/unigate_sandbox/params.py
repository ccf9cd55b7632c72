"""Validation of the request fields the sandbox uses, failing as OpenAI does: a 400 naming
the parameter. Fields the sandbox ignores are not judged (an upstream may accept them)."""

from __future__ import annotations

from typing import Any

from unigate.errors import InvalidRequest

MAX_STOP_SEQUENCES = 4
# The most output tokens any current OpenAI or Anthropic model allows in one reply: past it
# those APIs answer 400 (e.g. max_tokens 10**12), so the sandbox does too.
MAX_OUTPUT_TOKENS = 128_000


def invalid_type(param: str, expected: str) -> InvalidRequest:
    return InvalidRequest(
        f"Invalid type for '{param}': expected {expected}.", param=param, code="invalid_type"
    )


def invalid_value(param: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid value for '{param}': {message}", param=param, code="invalid_value")


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def optional_int(payload: dict[str, Any], key: str, low: int, high: int | None = None) -> int | None:
    """`payload[key]` as an int in [low, high], or None when absent or null."""
    value = payload.get(key)
    if value is None:
        return None
    if not is_int(value):
        raise invalid_type(key, "an integer")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise invalid_value(key, f"expected an integer {bound}, got {value}.")
    return int(value)


def optional_bool(payload: dict[str, Any], key: str, default: bool) -> bool:
    value = payload.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_type(key, "a boolean")
    return value


def optional_str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise invalid_type(key, "a string")
    return value


def choice_count(payload: dict[str, Any]) -> int:
    return optional_int(payload, "n", 1, 8) or 1


def stop_sequences(payload: dict[str, Any]) -> tuple[str, ...]:
    stop = payload.get("stop")
    if stop is None:
        return ()
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise invalid_type("stop", "a string or an array of strings")
    if len(items) > MAX_STOP_SEQUENCES:
        raise invalid_value("stop", f"at most {MAX_STOP_SEQUENCES} stop sequences are allowed.")
    if any(s == "" for s in items):
        raise invalid_value("stop", "stop sequences must not be empty.")
    return tuple(items)
