"""Same-format relays: what goes upstream when the client already speaks the upstream's own
format (an Anthropic client to an `anthropic` upstream, a Gemini client to a `gemini` one, a
Responses client to an upstream with its own Responses API). The client's body bytes are sent
with only the model id replaced, never re-serialised, and its query string and the vendor
headers that select API features are relayed beside them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

import orjson

from unigate.edge.asgi import urlencoded

# The key "model" in any spelling JSON allows (each letter literal or a `\u` escape), its colon
# and the space after it: the value starts where the match ends.
_MODEL_KEY: Final = re.compile(
    rb'"(?:m|\\u006[dD])(?:o|\\u006[fF])(?:d|\\u0064)(?:e|\\u0065)(?:l|\\u006[cC])"\s*:\s*'
)
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # one JSON string, escapes included
# Query parameters never relayed: the gateway's own key (`?key=`) authenticates the client to
# the gateway, not to the upstream.
_GATEWAY_PARAMS: Final = frozenset({"key"})


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """What a same-format relay forwards of the client's request besides its parsed body."""

    raw: bytes | None = None  # the body as received
    query: str = ""  # the query string to relay (already without the gateway's own parameters)
    headers: Mapping[str, str] = field(default_factory=dict)  # vendor headers to relay


def relayed_query(raw: bytes, force: Mapping[str, str] | None = None) -> str:
    """The client's query string without the gateway's own parameters; `force` sets
    parameters the relay depends on (a stream's `alt=sse`)."""
    pairs = [(k, v) for k, v in urlencoded(raw, "query string") if k not in _GATEWAY_PARAMS]
    if force:
        pairs = [(k, v) for k, v in pairs if k not in force] + list(force.items())
    return urlencode(pairs)


def with_query(path: str, query: str) -> str:
    if not query:
        return path
    return f"{path}&{query}" if "?" in path else f"{path}?{query}"


def request_body(payload: dict[str, Any], upstream_model: str, raw: bytes | None = None) -> bytes:
    """What goes upstream: the client's own bytes (`raw`) with only the top-level model id's
    value replaced; one re-serialisation of the parsed request with the model mapped only when
    the bytes do not say for certain where that value is (a duplicate top-level key)."""
    if raw is not None:
        if payload.get("model") == upstream_model:
            return raw
        spliced = _splice_model(raw, upstream_model)
        if spliced is not None:
            return spliced
    return orjson.dumps({**payload, "model": upstream_model})


def _splice_model(raw: bytes, upstream_model: str) -> bytes | None:
    span = _top_level_model(raw)
    if span is None:
        return None
    return raw[: span[0]] + orjson.dumps(upstream_model) + raw[span[1] :]


def _top_level_model(raw: bytes) -> tuple[int, int] | None:
    """The span of the top-level `model` string value. A `"model":` key nested in the body (a
    tool's schema) is told apart by the bracket depth outside strings, counted in C (strings
    removed by one regex) between the candidates. None when the value is not a string or the
    key is there twice (a parser keeps the last: the caller re-serialises then)."""
    keys = list(_MODEL_KEY.finditer(raw))
    if len(keys) == 1:  # the request has a top-level model, so a lone match is it
        return _string_at(raw, keys[0].end())
    depth, scanned, found = 0, 0, None
    for key in keys:
        if _escaped(raw, key.start()):
            continue  # inside a string: a key ending in `\"model` (the segment counts it)
        between = _STRING.sub(b"", raw[scanned : key.start()])
        depth += between.count(b"{") + between.count(b"[") - between.count(b"}") - between.count(b"]")
        scanned = key.end()
        if depth == 1:
            if found is not None:
                return None
            found = _string_at(raw, scanned)
            if found is None:
                return None
    return found


def _string_at(raw: bytes, at: int) -> tuple[int, int] | None:
    value = _STRING.match(raw, at)
    return None if value is None else value.span()


def _escaped(raw: bytes, quote: int) -> bool:
    """Whether the quote at `quote` is escaped (an odd run of backslashes before it)."""
    at = quote - 1
    while at >= 0 and raw[at] == 0x5C:
        at -= 1
    return (quote - 1 - at) % 2 == 1
