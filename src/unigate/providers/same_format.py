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
from typing import Any
from urllib.parse import urlencode

import orjson

from unigate.asgi import urlencoded

# A literal `"model"` key (the quotes unescaped, so never text inside a string) and its value.
_MODEL_KEY = re.compile(rb'"model"\s*:')
_MODEL_VALUE = re.compile(rb'"model"\s*:\s*("(?:[^"\\]|\\.)*")')
# JSON strings (whole, escapes included) and the brackets that change the nesting depth.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]')
_SPACE = b" \t\r\n"
# Query parameters never relayed: the gateway's own key (`?key=`) authenticates the client to
# the gateway, not to the upstream.
_GATEWAY_PARAMS = frozenset({"key"})


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
    span = _quick_span(raw)
    if span is None:
        span = _scanned_span(raw)
    if span is None:
        return None
    return raw[: span[0]] + orjson.dumps(upstream_model) + raw[span[1] :]


def _quick_span(raw: bytes) -> tuple[int, int] | None:
    # Without `\u` escapes every key is spelt literally, so when the document has exactly one
    # `"model":` key it is the top-level one: no scan needed (the common case).
    if b"\\u" in raw or len(_MODEL_KEY.findall(raw)) != 1:
        return None
    found = _MODEL_VALUE.search(raw)
    return None if found is None else found.span(1)


def _scanned_span(raw: bytes) -> tuple[int, int] | None:
    """The span of the top-level `model` value, found by walking the document's strings and
    brackets (a nested `model` key, as in a tool's schema, is skipped; an escaped spelling of
    the key is decoded). None when there is no such string value or there are two."""
    depth = 0
    found: tuple[int, int] | None = None
    expect_value = False
    for token in _TOKENS.finditer(raw):
        text = token.group()
        if text[0] != 0x22:  # a bracket
            depth += 1 if text in (b"{", b"[") else -1
            expect_value = False
            continue
        if expect_value:
            expect_value = False
            if found is not None:
                return None  # a duplicate key: the parser keeps the last, so re-serialise
            found = token.span()
            continue
        if depth == 1 and _is_key(raw, token.end()) and orjson.loads(text) == "model":
            expect_value = _value_is_string(raw, token.end())
            if not expect_value:
                return None  # a model that is not a string: the upstream judges the parsed form
    return found


def _is_key(raw: bytes, end: int) -> bool:
    rest = raw[end : end + 64].lstrip(_SPACE)
    return rest.startswith(b":")


def _value_is_string(raw: bytes, end: int) -> bool:
    rest = raw[end : end + 64].lstrip(_SPACE)[1:].lstrip(_SPACE)
    return rest.startswith(b'"')
