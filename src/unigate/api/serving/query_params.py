"""Query-string parameters of the admin reports, checked strictly: a parameter the endpoint
does not take, one given twice, or a value it cannot mean is a 400 naming the parameter, so a
typo never silently returns the unfiltered answer."""

from __future__ import annotations

from urllib.parse import parse_qsl

from unigate.edge.asgi import Request
from unigate.errors import InvalidRequest


def query_params(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    """The parameters as name -> value (blank values kept: `group_by=` means something)."""
    raw = request.scope.get("query_string", b"").decode("latin-1")
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, errors="strict") if raw else []
    except UnicodeDecodeError:
        raise InvalidRequest("The query string is not UTF-8 text.", code="invalid_query") from None
    params: dict[str, str] = {}
    for name, value in pairs:
        shown = _shown(name)
        if name not in allowed:
            raise InvalidRequest(
                f"Unknown query parameter '{shown}'; this endpoint takes {', '.join(allowed)}.",
                param=shown,
                code="unknown_parameter",
            )
        if name in params:
            raise InvalidRequest(f"'{name}' is given more than once.", param=name, code="invalid_value")
        if "\x00" in value or len(value) > 1000:
            raise InvalidRequest(f"Invalid value for '{name}'.", param=name, code="invalid_value")
        params[name] = value
    return params


def limit_param(params: dict[str, str], default: int, most: int) -> int:
    text = params.get("limit")
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= most:
        raise InvalidRequest(
            f"'limit' must be an integer from 1 to {most}.", param="limit", code="invalid_value"
        )
    return int(text)


def key_id_param(params: dict[str, str]) -> str | None:
    text = params.get("key_id")
    if text is None:
        return None
    if not 1 <= len(text) <= 40 or not text.isprintable() or " " in text:
        raise InvalidRequest("'key_id' must be a key id such as key_….", param="key_id", code="invalid_value")
    return text


def status_range(params: dict[str, str]) -> tuple[int, int] | None:
    """`status=429` (that code), `4xx` (a class) or `error` (400 and above)."""
    text = params.get("status")
    if text is None:
        return None
    if text == "error":
        return 400, 599
    if len(text) == 3 and text[0] in "12345" and text[1:] == "xx":
        low = int(text[0]) * 100
        return low, low + 99
    if len(text) == 3 and text.isascii() and text.isdigit() and 100 <= int(text) <= 599:
        return int(text), int(text)
    raise InvalidRequest(
        "'status' must be an HTTP status (e.g. 429), a class (e.g. 4xx) or 'error'.",
        param="status",
        code="invalid_value",
    )


def _shown(name: str) -> str:
    """A client's parameter name fit for a message: bounded, control characters escaped."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in name[:40])
