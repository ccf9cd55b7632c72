"""A failure no handler mapped is a 500 whose log line carries the exception: its type, message
and traceback, whether or not the caller is still inside its `except` block, and never the
caller's key."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from unigate.app import _unexpected
from unigate.edge.asgi import Request
from unigate.errors import GatewayError


def _fail_deep_inside() -> None:
    raise ValueError("the handler's own bug")


async def _nothing(*_: Any) -> Any:
    return None


def test_the_unhandled_error_line_has_the_traceback_and_no_key(caplog: pytest.LogCaptureFixture) -> None:
    key = "ug-secret-key-1234567890"
    scope = {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"authorization", f"Bearer {key}".encode())],
    }
    request = Request(scope, _nothing, _nothing, "req-1")
    try:
        _fail_deep_inside()
    except ValueError as caught:
        exc = caught
    # Called past the `except` block: the record must not depend on `sys.exc_info()`.
    with caplog.at_level(logging.ERROR, logger="unigate"):
        answer = _unexpected(request, exc)
    assert type(answer) is GatewayError and answer.status == 500
    [record] = [r for r in caplog.records if r.getMessage().startswith("unhandled error")]
    assert record.exc_info is not None and record.exc_info[1] is exc
    text = logging.Formatter().format(record)
    assert "POST /v1/chat/completions (request req-1)" in text
    assert "ValueError: the handler's own bug" in text
    assert "in _fail_deep_inside" in text, "the traceback down to the raise"
    assert "NoneType: None" not in text
    assert key not in text
