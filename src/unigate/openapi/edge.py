"""What the document derives from an `Endpoint` itself: its error responses (the family's
error shape, rendered once by the edge in app.py through `errors.render_error`), the
credentials it accepts (`auth/authenticate.py` reads every header form; each family documents
the forms its clients send) and its path parameters (the table's own regex). Nothing here is
written per operation, so a new endpoint gets all three right by construction."""

from __future__ import annotations

import re

from unigate.edge.endpoints import Endpoint
from unigate.errors import ErrorStyle
from unigate.openapi.schema import (
    JSON,
    Schema,
    any_of,
    array,
    const,
    integer,
    obj,
    ref,
    response,
    response_header,
    string,
)

_PARAM = re.compile(r"\{([a-z_]+)\}")


def security_schemes() -> dict[str, Schema]:
    return {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`ugk_…`) as `Authorization: Bearer <key>`: every key endpoint.",
        },
        "token": {
            "type": "http",
            "scheme": "Token",
            "description": "`Authorization: Token <key>`, the form Vidu's clients send.",
        },
        "apiKey": {
            "type": "apiKey",
            "in": "header",
            "name": "x-api-key",
            "description": "`x-api-key` (the Anthropic SDK) or `X-API-KEY` (PicWish): header names are "
            "case-insensitive.",
        },
        "googApiKey": {
            "type": "apiKey",
            "in": "header",
            "name": "x-goog-api-key",
            "description": "`x-goog-api-key`, as google-genai sends it.",
        },
        "googKey": {
            "type": "apiKey",
            "in": "query",
            "name": "key",
            "description": "`?key=<key>`, the Gemini API's query form.",
        },
        "adminBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "The admin key (`UNIGATE_ADMIN_KEY`, or the one printed at first start) as "
            "`Authorization: Bearer <admin key>`.",
        },
        "metricsBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "The metrics token (`UNIGATE_METRICS_TOKEN`) as `Authorization: Bearer <token>`: "
            "GET /metrics only.",
        },
    }


# The header forms each family's clients send, besides Bearer (which every key endpoint takes).
_STYLE_AUTH: dict[str, tuple[str, ...]] = {
    "anthropic": ("apiKey",),
    "gemini": ("googApiKey", "googKey"),
    "vidu": ("token",),
    "picwish": ("apiKey",),
}


def security(ep: Endpoint, extra: tuple[str, ...] = ()) -> list[dict[str, list[str]]]:
    """Alternatives, any one of which authenticates; [] for the endpoints that need none."""
    if ep.auth == "none":
        return []
    if ep.auth == "admin":
        return [{"adminBearer": []}]
    if ep.auth == "metrics":
        return [{"adminBearer": []}, {"metricsBearer": []}]
    names = ("bearer", *_STYLE_AUTH.get(ep.style, ()), *extra)
    return [{name: []} for name in dict.fromkeys(names)]


def error_schemas() -> dict[str, Schema]:
    """The error body of each `ErrorStyle`, as `render_error` writes it."""
    message = string("What went wrong, for people; never contains key material.")
    return {
        "OpenAIError": obj(
            {
                "error": obj(
                    {
                        "message": message,
                        "type": string("invalid_request_error, authentication_error, permission_error, …"),
                        "param": {"type": ["string", "null"]},
                        "code": {"type": ["string", "null"]},
                    },
                    ["message", "type"],
                )
            },
            ["error"],
            "OpenAI's error shape.",
        ),
        "MusicError": obj(
            {
                "code": string("The error code, e.g. invalid_request."),
                "message": message,
                "data": {"type": "null"},
            },
            ["code", "message", "data"],
            "The music envelope with an error code and no data.",
        ),
        "AnthropicError": obj(
            {
                "type": const("error"),
                "error": obj(
                    {"type": string("Anthropic's error type by status."), "message": message},
                    ["type", "message"],
                ),
                "request_id": string(),
            },
            ["type", "error"],
            "Anthropic's error shape.",
        ),
        "GeminiError": obj(
            {
                "error": obj(
                    {
                        "code": integer(description="The HTTP status."),
                        "message": message,
                        "status": string("e.g. INVALID_ARGUMENT"),
                    },
                    ["code", "message", "status"],
                )
            },
            ["error"],
            "Google's error shape.",
        ),
        "FishError": obj(
            {"status": integer(), "message": message}, ["status", "message"], "Fish Audio's error shape."
        ),
        "KlingError": obj(
            {
                "code": integer(description="Kling's service code (1000s auth, 1200s parameters, …)."),
                "message": message,
                "request_id": string(),
            },
            ["code", "message"],
            "Kling's error shape.",
        ),
        "ViduError": obj(
            {
                "code": integer(description="The HTTP status."),
                "reason": string("e.g. BadRequest"),
                "message": message,
                "metadata": obj({}),
            },
            ["code", "reason", "message"],
            "Vidu's error shape.",
        ),
        "PicWishError": obj(
            {"status": integer(), "message": message}, ["status", "message"], "PicWish's error shape."
        ),
        "StabilityError": obj(
            {
                "id": string("The request id."),
                "name": string("The error code."),
                "errors": array(string(), minItems=1),
            },
            ["id", "name", "errors"],
            "Stability's error shape.",
        ),
        "PlainError": obj({"message": message, "code": {"type": ["string", "null"]}}, ["message"]),
    }


_STYLE_SCHEMA: dict[ErrorStyle, str] = {
    "openai": "OpenAIError",
    "music": "MusicError",
    "anthropic": "AnthropicError",
    "gemini": "GeminiError",
    "fish": "FishError",
    "kling": "KlingError",
    "vidu": "ViduError",
    "picwish": "PicWishError",
    "stability": "StabilityError",
    "plain": "PlainError",
}

_STATUS_TEXT = {
    "400": "The request is malformed: wrong types, missing or out-of-range fields.",
    "401": "The key is missing, malformed, unknown, revoked or expired.",
    "402": "The key's budget is spent.",
    "403": "The key may not use this family or model.",
    "404": "No such model, task or file (another key's, or another family's, look the same).",
    "413": "The body is over the configured limit.",
    "429": "The key's rate limit is reached; retry after `Retry-After` seconds.",
    "502": "Every upstream route failed.",
    "503": "The database is unavailable (retry after `Retry-After`), or the gateway is overloaded.",
    "504": "The upstream timed out.",
    "default": "Any other failure, in the same shape.",
}


def error_schema(ep: Endpoint) -> Schema:
    return ref(_STYLE_SCHEMA[ep.style])


def error_responses(ep: Endpoint, schema: Schema, has_body: bool) -> dict[str, Schema]:
    """The failures the edge and the handlers raise for this kind of endpoint, each in the
    family's shape and with the `x-request-id` the edge always sends."""
    if ep.auth == "key":
        statuses = ["400", "401", "403", "404", "413", "429", "502", "503", "504"]
        if not has_body:
            statuses.remove("413")
    elif ep.auth == "admin":
        statuses = ["400", "401", "404", "503"]
    elif ep.auth == "metrics":
        statuses = ["401"]
    else:
        statuses = ["404"] if "{" in ep.path else []
    headers = {"x-request-id": response_header("The request's id, as in the access log.", required=True)}
    retry = {"Retry-After": response_header("Seconds to wait.", integer(minimum=0))}
    out = {}
    for status in [*statuses, "default"]:
        extra = retry if status in ("429", "503") else {}
        out[status] = response(_STATUS_TEXT[status], {JSON: schema}, {**headers, **extra})
    return out


def path_parameters(ep: Endpoint, narrower: dict[str, Schema], examples: dict[str, str]) -> list[Schema]:
    """One parameter per `{name}` of the path, matching what the table's regex matches unless
    the operation knows a narrower set (an enum of tools, say)."""
    out = []
    for name in _PARAM.findall(ep.path):
        parameter: Schema = {
            "name": name,
            "in": "path",
            "required": True,
            "schema": narrower.get(name) or string(pattern=f"^{ep.param}$"),
        }
        if name in examples:
            parameter["example"] = examples[name]
        out.append(parameter)
    return out


def styles_schema(*styles: ErrorStyle) -> Schema:
    """Errors of a path several client formats share: any of their shapes."""
    return any_of(*(ref(_STYLE_SCHEMA[s]) for s in styles))
