"""Handlers raise; only the edge renders. No router writes an error body itself, and a path
several client formats share (`GET /v1/models`, `GET /v1/models/{model}`) gets every error,
the edge's own (a bad key) and the handler's alike, in the shape of the client that asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.in_process import InProcessGateway

SRC = Path(__file__).resolve().parents[2] / "src" / "unigate"
SANDBOX = Path(__file__).resolve().parents[2] / "packages" / "unigate-sandbox" / "src"
# Where errors become responses: the edge, and the registry of their shapes.
RENDERERS = {SRC / "app.py", SRC / "edge" / "error_styles.py"}


def test_no_module_but_the_edge_renders_an_error() -> None:
    rendering = [
        str(path.relative_to(path.parents[2]))
        for root in (SRC, SANDBOX)
        for path in root.rglob("*.py")
        if path not in RENDERERS
        and any(name in path.read_text() for name in ("render_error", "error_status("))
    ]
    assert rendering == []


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("edge-renders")) as gateway:
        yield gateway


ANTHROPIC = {"anthropic-version": "2023-06-01"}


def test_a_shared_path_answers_each_error_in_its_clients_shape(gw: InProcessGateway) -> None:
    key = gw.create_key()
    missing = gw.request("GET", "/v1/models/no-such-model", key, headers=ANTHROPIC)
    assert missing.status_code == 404 and missing.json()["type"] == "error", missing.text
    assert missing.json()["error"]["type"] == "not_found_error"
    assert missing.headers["x-request-id"] == missing.json()["request_id"]
    bad_page = gw.request("GET", "/v1/models?limit=0", key, headers=ANTHROPIC)
    assert bad_page.status_code == 400 and bad_page.json()["error"]["type"] == "invalid_request_error"
    gemini = gw.request("GET", "/v1/models/no-such-model", key, headers={"x-goog-api-key": key})
    assert gemini.status_code == 404 and gemini.json()["error"]["status"] == "NOT_FOUND", gemini.text
    openai = gw.request("GET", "/v1/models/no-such-model", key)
    assert openai.status_code == 404 and openai.json()["error"]["code"] == "model_not_found"


def test_the_edges_own_refusal_is_in_the_clients_shape_too(gw: InProcessGateway) -> None:
    refused = gw.request("GET", "/v1/models", "ugk_not_a_key", headers=ANTHROPIC)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error" and refused.json()["type"] == "error"


def test_a_query_too_broken_to_read_is_never_a_500_on_a_shared_path(gw: InProcessGateway) -> None:
    """Choosing the error's shape read the whole query; a NUL in it was refused while choosing
    how to render that refusal, and the server answered 500 (found by schemathesis)."""
    key = gw.create_key()
    # Only `?key=` says Gemini: the rest of the query is not read for an OpenAI client.
    plain = gw.request("GET", "/v1/models/sandbox-chat?a%00=1", key)
    assert plain.status_code == 200, plain.text
    # A Gemini client's: a handler that reads the query refuses it in Gemini's shape.
    shown = gw.request("GET", "/v1/models/sandbox-chat?key=x&a%00=1", key)
    assert shown.status_code == 200 and shown.json()["name"] == "models/sandbox-chat", shown.text
    listed = gw.request("GET", "/v1/models?a%00=1&key=x", key)
    assert listed.status_code == 400, listed.text
    assert listed.json()["error"]["status"] == "INVALID_ARGUMENT" and "NUL" in listed.text
