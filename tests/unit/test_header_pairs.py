"""A scope's headers as another ASGI server may hand them (pairs as lists, a tuple of pairs):
read the same as the project's own server's list of (bytes, bytes) tuples, which the compiled
request path reads typed (`edge/asgi.py`'s `header_of` and `as_pairs`)."""

from __future__ import annotations

from typing import Any

import pytest

from unigate.auth.authenticate import extract_key
from unigate.edge.asgi import Request, header_of
from unigate.errors import InvalidRequest
from unigate.observability.request_ids import RequestIds

OURS = [
    (b"content-type", b"application/json"),
    (b"authorization", b"Bearer ug-abc"),
    (b"x-request-id", b"r-1"),
]
SHAPES = {
    "tuples in a list (ours)": OURS,
    "lists in a list": [list(pair) for pair in OURS],
    "tuples in a tuple": tuple(OURS),
    "a tuple, then lists": [OURS[0], list(OURS[1]), list(OURS[2])],
}


async def _never(*args: object) -> dict[str, object]:
    raise AssertionError("nothing is read from the client")


@pytest.mark.parametrize("headers", SHAPES.values(), ids=SHAPES.keys())
def test_every_shape_of_pairs_reads_alike(headers: Any) -> None:
    scope = {"method": "POST", "path": "/v1/chat/completions", "headers": headers}
    request = Request(scope, _never, _never, "id")
    assert header_of(headers, b"content-type") == b"application/json"
    assert header_of(headers, b"x-missing") is None
    assert request.header(b"x-request-id") == b"r-1"
    assert extract_key(request) == "ug-abc"
    assert RequestIds().for_request(scope) == "r-1"


def test_two_authorization_headers_are_refused_in_any_shape() -> None:
    pairs = [[b"authorization", b"Bearer a"], [b"authorization", b"Bearer b"]]
    for headers in (pairs, [tuple(p) for p in pairs]):
        request = Request({"method": "GET", "path": "/v1/models", "headers": headers}, _never, _never, "id")
        with pytest.raises(InvalidRequest, match="Duplicate Authorization"):
            extract_key(request)
