"""The error styles are one registry (`edge/error_styles.py`): each entry's renderer writes what
its own schema describes, and everything that differs per style (the edge's body and status,
the shape of unmatched paths, the table's check, the API description's schemas and security,
the key forms authentication accepts) is read from the entries, so a new style is one entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import orjson
import pytest

from unigate.auth.authenticate import extract_key
from unigate.auth.principal import Principal
from unigate.edge import error_styles
from unigate.edge.asgi import Request
from unigate.edge.endpoint_table import EndpointTable
from unigate.edge.endpoints import Endpoint
from unigate.edge.error_styles import (
    KEY_FORMS,
    STYLES,
    ErrorStyle,
    KeyForm,
    error_status,
    render_error,
    style_for_path,
)
from unigate.errors import (
    AuthenticationFailed,
    BudgetExceeded,
    Conflict,
    DatabaseUnavailable,
    GatewayError,
    GatewayOverloaded,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    StorageQuotaExceeded,
    StorageUnavailable,
    UpstreamFailed,
    UpstreamRejected,
)
from unigate.openapi import edge as openapi_edge

ERRORS: list[GatewayError] = [
    InvalidRequest("bad field", param="model"),
    AuthenticationFailed("Missing API key.", code="missing_api_key"),
    AuthenticationFailed("This API key has been revoked.", code="revoked_api_key"),
    PermissionDenied("no"),
    NotFound("none"),
    Conflict("again"),
    PayloadTooLarge("big"),
    RateLimited("slow down", headers={"retry-after": "3"}),
    BudgetExceeded("spent"),
    StorageQuotaExceeded("full"),
    UpstreamRejected(422, "the upstream said no"),
    UpstreamRejected(400, "relayed", b'{"error": {"message": "relayed", "type": "x"}}'),
    UpstreamFailed("All upstream routes failed.", status=504, code="upstream_timeout"),
    DatabaseUnavailable(),
    StorageUnavailable("disk"),
    GatewayOverloaded("busy"),
    GatewayError("Internal server error."),
]


@pytest.mark.parametrize("name", list(STYLES))
def test_every_style_renders_what_its_schema_describes(name: str) -> None:
    validator = jsonschema_rs.validator_for(STYLES[name].schema())
    for err in ERRORS:
        body = orjson.loads(render_error(err, name, "req-1"))
        problems = [e.message for e in validator.iter_errors(body)]
        assert problems == [], (name, type(err).__name__, body)
        assert 400 <= error_status(err, name) <= 599


def test_status_quirks_are_the_styles_own() -> None:
    spent = BudgetExceeded("spent")
    assert {name: error_status(spent, name) for name in STYLES} == {
        name: 402 if name == "music" else 429 for name in STYLES
    }


async def _ok(request: Request, principal: Principal) -> None:
    return None


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Iterator[ErrorStyle]:
    """A style that exists nowhere but in the registry."""

    def render(err: GatewayError, request_id: str) -> bytes:
        return orjson.dumps({"oops": err.message, "rid": request_id})

    def schema() -> dict[str, Any]:
        return {"type": "object", "properties": {"oops": {"type": "string"}}, "required": ["oops"]}

    entry = ErrorStyle(
        "acme",
        render,
        "AcmeError",
        schema,
        prefixes=("/acme/",),
        key_forms=(KeyForm("acmeKey", "header", "x-acme-key", "Acme's header."),),
        statuses={RateLimited: 420},
    )
    monkeypatch.setitem(STYLES, "acme", entry)
    yield entry


def test_a_new_style_is_one_entry(acme: ErrorStyle) -> None:
    limited = RateLimited("slow down")
    assert orjson.loads(render_error(limited, "acme", "r9")) == {"oops": "slow down", "rid": "r9"}
    assert error_status(limited, "acme") == 420 and error_status(NotFound("x"), "acme") == 404
    assert style_for_path("/acme/v1/nothing") == "acme"
    endpoint = Endpoint("POST", "/acme/v1/things", _ok, family="text", style="acme")
    table = EndpointTable([endpoint])  # the table knows the style
    assert table.match("POST", "/acme/v1/things")[0] is endpoint
    assert openapi_edge.error_schemas()["AcmeError"] == acme.schema()
    assert openapi_edge.error_schema(endpoint) == {"$ref": "#/components/schemas/AcmeError"}
    assert {"acmeKey": []} in openapi_edge.security(endpoint)


def test_the_table_refuses_a_style_nobody_declared() -> None:
    with pytest.raises(ValueError, match="POST /v9/x: unknown error style 'acme'"):
        EndpointTable([Endpoint("POST", "/v9/x", _ok, style="acme")])


def _request(headers: list[tuple[bytes, bytes]], query: bytes = b"") -> Request:
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query, "headers": headers}

    async def nothing(*_: Any) -> Any:
        return None

    return Request(scope, nothing, nothing, "rid")


@pytest.mark.parametrize("form", list(KEY_FORMS.values()), ids=list(KEY_FORMS))
def test_authentication_accepts_every_styles_key_form(form: KeyForm) -> None:
    key = "ugk_example"
    if form.where == "authorization":
        request = _request([(b"authorization", f"{form.name.title()} {key}".encode())])
    elif form.where == "header":
        request = _request([(form.name.encode(), key.encode())])
    else:
        request = _request([], f"{form.name}={key}".encode())
    assert extract_key(request) == key
    assert form.scheme in openapi_edge.security_schemes()


def test_every_key_form_belongs_to_a_style_or_bearer() -> None:
    declared = {f.scheme for entry in STYLES.values() for f in entry.key_forms}
    assert set(KEY_FORMS) == declared | {error_styles.BEARER.scheme}
