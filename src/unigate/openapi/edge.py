"""What the document derives from an `Endpoint` itself: its error responses (the family's
error style, whose entry in `edge/error_styles.py` renders it at the edge and gives its schema
here), the credentials it accepts (`auth/authenticate.py` reads every style's key forms; each
family documents the forms its clients send) and its path parameters (the table's own regex).
Nothing here is written per operation, so a new endpoint gets all three right by construction."""

from __future__ import annotations

import re

from unigate.edge.endpoints import Endpoint
from unigate.edge.error_styles import BEARER, KEY_FORMS, STYLES
from unigate.openapi.schema import (
    JSON,
    Schema,
    any_of,
    integer,
    ref,
    response,
    response_header,
    string,
)

_PARAM = re.compile(r"\{([a-z_]+)\}")


def security_schemes() -> dict[str, Schema]:
    """The API key forms the error styles' clients send (`edge/error_styles.py`), and the
    admin key and metrics token."""
    return {
        **{name: form.security_scheme() for name, form in KEY_FORMS.items()},
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


def security(ep: Endpoint, extra: tuple[str, ...] = ()) -> list[dict[str, list[str]]]:
    """Alternatives, any one of which authenticates; [] for the endpoints that need none."""
    if ep.auth == "none":
        return []
    if ep.auth == "admin":
        return [{"adminBearer": []}]
    if ep.auth == "metrics":
        return [{"adminBearer": []}, {"metricsBearer": []}]
    names = (BEARER.scheme, *(form.scheme for form in STYLES[ep.style].key_forms), *extra)
    return [{name: []} for name in dict.fromkeys(names)]


def error_schemas() -> dict[str, Schema]:
    """The error body of each error style, as it renders it."""
    return {style.schema_name: style.schema() for style in STYLES.values()}


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
    return ref(STYLES[ep.style].schema_name)


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


def styles_schema(*styles: str) -> Schema:
    """Errors of a path several client formats share: any of their shapes."""
    return any_of(*(ref(STYLES[s].schema_name) for s in styles))
