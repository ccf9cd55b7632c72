"""Field checks shared by the media endpoints. Values come from JSON (typed) or from
multipart forms (always strings: the OpenAI SDK sends `n=2`, `stream=true`), so every check
accepts both spellings and raises a 400 that names the field."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from unigate.edge.multipart import Form, UploadedFile
from unigate.errors import InvalidRequest


def _bad(name: str, expected: str) -> InvalidRequest:
    return InvalidRequest(
        f"Invalid value for '{name}': expected {expected}.", param=name, code="invalid_value"
    )


def required_text(payload: dict[str, Any], name: str, max_len: int | None = None) -> str:
    value = payload.get(name)
    if value is None or value == "":
        raise InvalidRequest(
            f"Missing required parameter: '{name}'.", param=name, code="missing_required_parameter"
        )
    if not isinstance(value, str):
        raise _bad(name, "a string")
    if max_len is not None and len(value) > max_len:
        raise InvalidRequest(
            f"'{name}' is too long: {len(value)} characters, at most {max_len}.",
            param=name,
            code="invalid_value",
        )
    return value


def optional_text(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(name, "a string")
    return value


def choice(
    payload: dict[str, Any], name: str, options: Collection[str], default: str | None = None
) -> str | None:
    value = payload.get(name)
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value not in options:
        raise _bad(name, "one of " + ", ".join(sorted(options)))
    return value


def number(payload: dict[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise _bad(name, f"a number from {lo:g} to {hi:g}")
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        raise _bad(name, f"a number from {lo:g} to {hi:g}") from None
    if not lo <= parsed <= hi:
        raise _bad(name, f"a number from {lo:g} to {hi:g}")
    return parsed


def integer(payload: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
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


def boolean(payload: dict[str, Any], name: str) -> bool | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise _bad(name, "a boolean")


def form_payload(form: Form) -> dict[str, Any]:
    """The form's text fields as one mapping: first value, or the list for array fields."""
    out: dict[str, Any] = {}
    for name, values in form.fields.items():
        out[name] = values if len(values) > 1 or _sent_as_array(form, name) else values[0]
    return out


def _sent_as_array(form: Form, key: str) -> bool:
    return any(name == key + "[]" for name, _ in form.parts)


def one_file(form: Form, name: str, what: str) -> UploadedFile:
    upload = form.file(name)
    if upload is None:
        raise InvalidRequest(
            f"Missing required file: '{name}' ({what}) as a multipart file part.",
            param=name,
            code="missing_required_parameter",
        )
    if upload.size == 0:
        raise InvalidRequest(f"The file '{name}' is empty.", param=name, code="invalid_file")
    return upload


def optional_file(form: Form, name: str) -> UploadedFile | None:
    """An optional file part. A text field of that name is refused: a client that sent the
    file's content or link as text would otherwise have it silently ignored."""
    if name in form.fields:
        raise InvalidRequest(
            f"'{name}' must be a file part (with a filename), not a text field.",
            param=name,
            code="invalid_file",
        )
    return form.file(name)
