"""The error styles: each client family's error shape, declared once as one `ErrorStyle` entry
of `STYLES`. An entry says everything the gateway does differently for that family's errors:
how a `GatewayError` is rendered, which statuses it answers differently (the music family's
402 for a spent budget), the body's JSON Schema (the API description's error responses), the
paths it answers for when no endpoint matched, and the credential forms its clients send.

Everything else reads from here: the edge renders every error (`render_error`,
`error_status`), the endpoint table refuses an unknown style and answers unmatched paths by
prefix (`style_for_path`), authentication accepts every entry's credential forms
(`KEY_HEADERS`, `KEY_SCHEMES`, `KEY_QUERY`), and `openapi/edge.py` documents the schemas and
security schemes. A new style is one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from unigate.errors import BudgetExceeded, GatewayError, UpstreamRejected

Schema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class KeyForm:
    """One way a family's clients send their API key: `where` is "authorization" (the header's
    scheme is `name`), "header" (a header named `name`) or "query" (a parameter `name`)."""

    scheme: str  # the OpenAPI security scheme's name
    where: Literal["authorization", "header", "query"]
    name: str
    description: str

    def security_scheme(self) -> Schema:
        if self.where == "authorization":
            return {"type": "http", "scheme": self.name, "description": self.description}
        location = "header" if self.where == "header" else "query"
        return {"type": "apiKey", "in": location, "name": self.name, "description": self.description}


@dataclass(frozen=True, slots=True)
class ErrorStyle:
    name: str
    render: Callable[[GatewayError, str], bytes]  # (error, request id) -> the body
    schema_name: str
    schema: Callable[[], Schema]  # the body's JSON Schema, built when the API description is
    prefixes: tuple[str, ...] = ()  # unmatched paths under these answer in this shape
    key_forms: tuple[KeyForm, ...] = ()  # what its clients send besides `Authorization: Bearer`
    statuses: Mapping[type[GatewayError], int] = field(default_factory=dict)  # status quirks

    def status(self, err: GatewayError) -> int:
        for cls, status in self.statuses.items():
            if isinstance(err, cls):
                return status
        return err.status


BEARER = KeyForm(
    "bearer",
    "authorization",
    "bearer",
    "An API key (`ugk_…`) as `Authorization: Bearer <key>`: every key endpoint.",
)
_X_API_KEY = KeyForm(
    "apiKey",
    "header",
    "x-api-key",
    "`x-api-key` (the Anthropic SDK) or `X-API-KEY` (PicWish): header names are case-insensitive.",
)


# -- the shapes --

_MESSAGE: Schema = {
    "type": "string",
    "description": "What went wrong, for people; never contains key material.",
}


def _object(properties: Schema, required: list[str], description: str = "") -> Schema:
    schema: Schema = {"type": "object", "properties": properties, "required": required}
    if description:
        schema["description"] = description
    return schema


def _string(description: str) -> Schema:
    return {"type": "string", "description": description}


def _integer(description: str = "") -> Schema:
    return {"type": "integer", "description": description} if description else {"type": "integer"}


def _openai(err: GatewayError, request_id: str) -> bytes:
    if isinstance(err, UpstreamRejected) and err.raw_openai_body is not None:
        return err.raw_openai_body
    return orjson.dumps(
        {"error": {"message": err.message, "type": err.type, "param": err.param, "code": err.code}}
    )


def _openai_schema() -> Schema:
    error = _object(
        {
            "message": _MESSAGE,
            "type": _string("invalid_request_error, authentication_error, permission_error, …"),
            "param": {"type": ["string", "null"]},
            "code": {"type": ["string", "null"]},
        },
        ["message", "type"],
    )
    return _object({"error": error}, ["error"], "OpenAI's error shape.")


def _music(err: GatewayError, request_id: str) -> bytes:
    return orjson.dumps({"code": err.code or "error", "message": err.message, "data": None})


def _music_schema() -> Schema:
    return _object(
        {
            "code": _string("The error code, e.g. invalid_request."),
            "message": _MESSAGE,
            "data": {"type": "null"},
        },
        ["code", "message", "data"],
        "The music envelope with an error code and no data.",
    )


# Anthropic names its error kinds by status.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
}


def _anthropic(err: GatewayError, request_id: str) -> bytes:
    kind = _ANTHROPIC_TYPES.get(err.status, "api_error")
    return orjson.dumps(
        {"type": "error", "error": {"type": kind, "message": err.message}, "request_id": request_id}
    )


def _anthropic_schema() -> Schema:
    error = _object(
        {"type": _string("Anthropic's error type by status."), "message": _MESSAGE}, ["type", "message"]
    )
    return _object(
        {"type": {"const": "error"}, "error": error, "request_id": {"type": "string"}},
        ["type", "error"],
        "Anthropic's error shape.",
    )


# Google names its error kinds by status too.
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _gemini(err: GatewayError, request_id: str) -> bytes:
    status = _GEMINI_STATUS.get(err.status, "INTERNAL")
    return orjson.dumps({"error": {"code": err.status, "message": err.message, "status": status}})


def _gemini_schema() -> Schema:
    error = _object(
        {
            "code": _integer("The HTTP status."),
            "message": _MESSAGE,
            "status": _string("e.g. INVALID_ARGUMENT"),
        },
        ["code", "message", "status"],
    )
    return _object({"error": error}, ["error"], "Google's error shape.")


def _status_message(err: GatewayError, request_id: str) -> bytes:
    """Fish Audio's and PicWish's shape: the status and a message."""
    return orjson.dumps({"status": err.status, "message": err.message})


def _status_message_schema(vendor: str) -> Callable[[], Schema]:
    return lambda: _object(
        {"status": _integer(), "message": _MESSAGE}, ["status", "message"], f"{vendor}'s error shape."
    )


# Kling's service codes by HTTP status: 1000s auth, 1100s account, 1200s parameters, 1300s
# policy and rate, 5000s server; an authentication failure says which (its `code`).
_KLING_CODES = {
    400: 1201,
    401: 1000,
    402: 1102,
    403: 1103,
    404: 1203,
    409: 1201,
    413: 1201,
    429: 1302,
    504: 5002,
}
_KLING_AUTH = {"missing_api_key": 1001, "revoked_api_key": 1004, "expired_api_key": 1004}


def _kling(err: GatewayError, request_id: str) -> bytes:
    code = _KLING_AUTH.get(err.code or "") or _KLING_CODES.get(err.status, 5000)
    return orjson.dumps({"code": code, "message": err.message, "request_id": request_id})


def _kling_schema() -> Schema:
    return _object(
        {
            "code": _integer("Kling's service code (1000s auth, 1200s parameters, …)."),
            "message": _MESSAGE,
            "request_id": {"type": "string"},
        },
        ["code", "message"],
        "Kling's error shape.",
    )


# Vidu's `reason` words (its error-code page) by HTTP status.
_VIDU_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    402: "CreditInsufficient",
    403: "Forbidden",
    404: "TaskNotFound",
    409: "Conflict",
    413: "BadRequest",
    429: "TooManyRequests",
}


def _vidu(err: GatewayError, request_id: str) -> bytes:
    reason = _VIDU_REASONS.get(err.status, "InternalServiceFailure")
    return orjson.dumps({"code": err.status, "reason": reason, "message": err.message, "metadata": {}})


def _vidu_schema() -> Schema:
    return _object(
        {
            "code": _integer("The HTTP status."),
            "reason": _string("e.g. BadRequest"),
            "message": _MESSAGE,
            "metadata": {"type": "object", "properties": {}},
        },
        ["code", "reason", "message"],
        "Vidu's error shape.",
    )


def _stability(err: GatewayError, request_id: str) -> bytes:
    return orjson.dumps({"id": request_id, "name": err.code or "error", "errors": [err.message]})


def _stability_schema() -> Schema:
    return _object(
        {
            "id": _string("The request id."),
            "name": _string("The error code."),
            "errors": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        ["id", "name", "errors"],
        "Stability's error shape.",
    )


def _plain(err: GatewayError, request_id: str) -> bytes:
    return orjson.dumps({"message": err.message, "code": err.code})


def _plain_schema() -> Schema:
    return _object({"message": _MESSAGE, "code": {"type": ["string", "null"]}}, ["message"])


_ENTRIES = (
    ErrorStyle("openai", _openai, "OpenAIError", _openai_schema),
    ErrorStyle(
        "music", _music, "MusicError", _music_schema, prefixes=("/suno/",), statuses={BudgetExceeded: 402}
    ),
    ErrorStyle("anthropic", _anthropic, "AnthropicError", _anthropic_schema, key_forms=(_X_API_KEY,)),
    ErrorStyle(
        "gemini",
        _gemini,
        "GeminiError",
        _gemini_schema,
        prefixes=("/v1beta/",),
        key_forms=(
            KeyForm("googApiKey", "header", "x-goog-api-key", "`x-goog-api-key`, as google-genai sends it."),
            KeyForm("googKey", "query", "key", "`?key=<key>`, the Gemini API's query form."),
        ),
    ),
    ErrorStyle(
        "fish", _status_message, "FishError", _status_message_schema("Fish Audio"), prefixes=("/fish/",)
    ),
    ErrorStyle("stability", _stability, "StabilityError", _stability_schema, prefixes=("/stability/",)),
    ErrorStyle("kling", _kling, "KlingError", _kling_schema, prefixes=("/kling/",)),
    ErrorStyle(
        "vidu",
        _vidu,
        "ViduError",
        _vidu_schema,
        prefixes=("/ent/",),
        key_forms=(
            KeyForm(
                "token",
                "authorization",
                "Token",
                "`Authorization: Token <key>`, the form Vidu's clients send.",
            ),
        ),
    ),
    ErrorStyle(
        "picwish",
        _status_message,
        "PicWishError",
        _status_message_schema("PicWish"),
        prefixes=("/api/tasks/",),
        key_forms=(_X_API_KEY,),
    ),
    ErrorStyle("plain", _plain, "PlainError", _plain_schema, prefixes=("/media/",)),
)
STYLES: dict[str, ErrorStyle] = {entry.name: entry for entry in _ENTRIES}
DEFAULT = "openai"  # the shape of paths no entry claims

# Every credential form some family's clients send (authentication accepts each on every key
# endpoint: a family's own SDK is not the only client of its paths).
KEY_FORMS: dict[str, KeyForm] = {
    form.scheme: form for form in (BEARER, *(f for entry in STYLES.values() for f in entry.key_forms))
}
KEY_SCHEMES = frozenset(f.name.lower() for f in KEY_FORMS.values() if f.where == "authorization")
KEY_HEADERS = tuple(dict.fromkeys(f.name.lower().encode() for f in KEY_FORMS.values() if f.where == "header"))
KEY_QUERY = tuple(dict.fromkeys(f.name for f in KEY_FORMS.values() if f.where == "query"))


def render_error(err: GatewayError, style: str, request_id: str = "") -> bytes:
    """The JSON body for `err` in the shape the family's clients parse."""
    return STYLES[style].render(err, request_id)


def error_status(err: GatewayError, style: str) -> int:
    """The HTTP status of `err` in the family's responses (a few families use their own)."""
    return STYLES[style].status(err)


def style_for_path(path: str) -> str:
    """The error shape for a path no endpoint matched."""
    for entry in STYLES.values():
        if path.startswith(entry.prefixes):
            return entry.name
    return DEFAULT
