"""What an upstream's failed answer becomes, decided once for every adapter.

    upstream answer              error               client status   Retry-After
    401, 403                     RouteFailed         502             -
    408                          RouteFailed         504             -
    404                          RouteFailed         502             -
    404 the client's own         UpstreamRejected    404             -
    409                          UpstreamRejected    400             -
    413                          UpstreamRejected    413             -
    429                          RouteFailed         429             relayed
    503                          RouteFailed         503             relayed
    other 5xx (529 too)          RouteFailed         502             -
    other 4xx, a JSON body       UpstreamRejected    its own         -
    other 4xx, a body not JSON   RouteFailed         502             -
    3xx, or an error under 2xx   RouteFailed         502             -

`RouteFailed` means another route may answer (routing tries the next one, and the client gets
the last one's status when none does); `UpstreamRejected` is the client's own request refused,
relayed with the upstream's message. 401 and 403 refuse the *gateway's* credentials, so they
are never the client's fault, and their message is never relayed (it may quote the key). A 409
is relayed as 400: the OpenAI and Anthropic SDKs retry a 409, which would repeat (and pay for) a
job. `Retry-After` is relayed wherever the client gets a 429 or a 503, and nowhere else. A 404,
or a refusal whose body is not JSON (an HTML page), is no answer of the vendor's API to the
client's request but a base_url that points elsewhere (most often one missing `/v1`): the
client gets a 502 naming the upstream status and path, with that hint. Only where the 404 is
about what the client named (`clients_404`: a call naming an object by its id, a stored response,
a video's file, a delete; or a vendor body whose own code says the model does not exist) is a
JSON 404 relayed as the client's 404.

Vendors differ only in where their answer says what went wrong (an error body's message, a
service code or a body `status` under an HTTP 200): each adapter reads that and hands the
HTTP-like status here (`upstream_error`); the classes above are not theirs to decide.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from unigate.errors import UpstreamFailed, UpstreamRejected
from unigate.providers.base import RouteFailed

REJECTED = "The upstream rejected the request."


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table: whether another route may answer, the client's status (None: the
    upstream's own), whether `Retry-After` is relayed, and how the failure reads in the logs."""

    route_failed: bool
    client_status: int | None
    retry_after: bool = False
    says: str = ""


_CREDENTIALS = Row(True, 502, says="refused the gateway's credentials")
_ROWS = {
    401: _CREDENTIALS,
    403: _CREDENTIALS,
    404: Row(True, 502, says="has no such endpoint"),
    408: Row(True, 504, says="timed out"),
    409: Row(False, 400),
    413: Row(False, 413),
    429: Row(True, 429, retry_after=True, says="is rate limiting requests"),
    503: Row(True, 503, retry_after=True, says="is unavailable"),
}
_SERVER_ERROR = Row(True, 502, says="failed")
_CLIENT_ERROR = Row(False, None)
_NO_ANSWER = Row(True, 502, says="gave no usable answer")  # 3xx, or an error body under a 2xx
_NOT_JSON = Row(True, 502, says="answered with a page that is not its API's JSON")

# The statuses a route failure reaches the client with (`client_error`), and their codes.
FAILURE_CODES = {
    429: "upstream_rate_limited",
    502: "upstream_unavailable",
    503: "upstream_unavailable",
    504: "upstream_timeout",
}


@dataclass(frozen=True, slots=True)
class Said:
    """What a vendor's error body says, as its adapter reads it."""

    message: str = ""
    code: str | None = None
    raw_openai_body: bytes | None = None  # an OpenAI-shaped error body, relayed as is


Reader = Callable[[bytes], Said]  # a vendor's reading of its error body


def row(status: int) -> Row:
    """The table's line for an upstream HTTP status."""
    found = _ROWS.get(status)
    if found is not None:
        return found
    if status >= 500:
        return _SERVER_ERROR
    if status >= 400:
        return _CLIENT_ERROR
    return _NO_ANSWER


def upstream_error(
    status: int,
    said: Said | None = None,
    *,
    vendor: str = "",
    retry_after: str | None = None,
    detail: str = "",
    path: str = "",
    not_json: bool = False,
    clients_404: bool = False,
) -> RouteFailed | UpstreamRejected:
    """The contract's error for an upstream answer with (HTTP-like) `status`: `said` is what
    the vendor's body says (relayed only on a rejection), `detail` a word for the log line,
    `path` the request's URL path, `not_json` whether the body was something else than JSON,
    `clients_404` whether a 404 is about what the client named (see the table)."""
    line = _CLIENT_ERROR if status == 404 and clients_404 else row(status)
    if not_json and not line.route_failed:
        line = _NOT_JSON
    if line.route_failed:
        who = f"The {vendor} upstream" if vendor else "The upstream"
        at = f" at {path}" if path else ""
        more = f", {detail}" if detail else ""
        hint = base_url_hint(path) if status == 404 or line is _NOT_JSON else ""
        return RouteFailed(
            f"{who} {line.says} (HTTP {status}{at}{more}){hint}.",
            line.client_status or 502,
            retry_after if line.retry_after else None,
            cause="answer",
            upstream_status=status,
        )
    said = said or Said()
    return UpstreamRejected(
        line.client_status or status, said.message or REJECTED, said.raw_openai_body, said.code
    )


def base_url_hint(path: str) -> str:
    """What to check when an upstream has no API at `path`: a path without a version segment
    (`/chat/completions`) says the base_url lacks its `/v1`."""
    if path and not re.search(r"/v\d", path):
        return "; the provider's base_url probably lacks /v1 (e.g. https://api.example.com/v1)"
    return "; check the provider's base_url"


def client_error(failure: RouteFailed, message: str) -> UpstreamFailed:
    """The client's error when no route answered: the last failure's status (502 unless it is
    one of `FAILURE_CODES`), with its `Retry-After` where the table relays it."""
    status = failure.status if failure.status in FAILURE_CODES else 502
    wait = failure.retry_after if status in (429, 503) else None
    headers = {"retry-after": wait} if wait else None
    return UpstreamFailed(message, status=status, code=FAILURE_CODES[status], headers=headers)


def json_body(data: bytes) -> Any:
    """An error body's JSON (None when it is not JSON): what vendors read their message from."""
    try:
        return orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return None


def error_object(data: bytes) -> dict[str, Any] | None:
    """The `error` object of a body `{"error": {"message": ..., ...}}`, the shape OpenAI,
    Anthropic and Google answer errors in; None for any other body."""
    parsed = json_body(data)
    err = parsed.get("error") if isinstance(parsed, dict) else None
    return err if isinstance(err, dict) else None


def message_of(err: dict[str, Any] | None) -> str:
    message = err.get("message") if err is not None else None
    return message if isinstance(message, str) else ""
