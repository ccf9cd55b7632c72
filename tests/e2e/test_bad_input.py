"""Bad input gets the right 4xx in OpenAI shape, never a 500."""

from __future__ import annotations

import pytest

from tests.support.net import http
from tests.support.served import ServedGateway


@pytest.fixture(scope="module")
def key(sandbox_gateway: ServedGateway) -> str:
    return sandbox_gateway.create_key()


def _post(
    gw: ServedGateway, key: str, path: str, body: bytes, ctype: str = "application/json"
) -> tuple[int, dict]:
    res = http("POST", gw.base_url + path, body, {"Authorization": f"Bearer {key}", "Content-Type": ctype})
    payload = res.json()
    assert set(payload) == {"error"} and {"message", "type", "param", "code"} <= set(payload["error"])
    return res.status, payload["error"]


@pytest.mark.parametrize(
    ("path", "body", "status", "param"),
    [
        ("/v1/chat/completions", b"{not json", 400, None),
        ("/v1/chat/completions", b"", 400, None),
        ("/v1/chat/completions", b"[1,2,3]", 400, None),
        ("/v1/chat/completions", b'{"model": "sandbox-chat"}', 400, "messages"),
        ("/v1/chat/completions", b'{"messages": [{"role":"user","content":"x"}]}', 400, "model"),
        ("/v1/chat/completions", b'{"model": 42, "messages": []}', 400, "model"),
        ("/v1/chat/completions", b'{"model": "sandbox-chat", "messages": "hi"}', 400, "messages"),
        ("/v1/chat/completions", b'{"model": "sandbox-chat", "messages": []}', 400, "messages"),
        (
            "/v1/chat/completions",
            b'{"model": "sandbox-chat", "messages": [{"role": "wizard"}]}',
            400,
            "messages[0].role",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "sandbox-chat", "messages": [{"role":"user","content":5}]}',
            400,
            "messages[0].content",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "sandbox-chat", "stream": "yes", "messages": [{"role":"user","content":"x"}]}',
            400,
            "stream",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "sandbox-chat", "max_tokens": "ten", "messages": [{"role":"user","content":"x"}]}',
            400,
            "max_tokens",
        ),
        (
            "/v1/chat/completions",
            b'{"model": "no-such-model", "messages": [{"role":"user","content":"x"}]}',
            404,
            "model",
        ),
        ("/v1/completions", b'{"model": "sandbox-chat"}', 400, "prompt"),
        ("/v1/embeddings", b'{"model": "sandbox-embedding"}', 400, "input"),
        ("/v1/embeddings", b'{"model": "sandbox-embedding", "input": 12}', 400, "input"),
        (
            "/v1/chat/completions",
            b'{"model": "sandbox-chat", "messages": [{"role":"user","content":"\\ud800"}]}',
            400,
            None,
        ),
        ("/v1/chat/completions", b"[" * 100_000, 400, None),
    ],
)
def test_bad_request_bodies(
    sandbox_gateway: ServedGateway, key: str, path: str, body: bytes, status: int, param: str | None
) -> None:
    got, err = _post(sandbox_gateway, key, path, body)
    assert got == status, err
    if param is not None:
        assert err["param"] == param


def test_unknown_model_code(sandbox_gateway: ServedGateway, key: str) -> None:
    status, err = _post(
        sandbox_gateway,
        key,
        "/v1/chat/completions",
        b'{"model": "gpt-nope", "messages": [{"role":"user","content":"x"}]}',
    )
    assert status == 404 and err["code"] == "model_not_found"


def test_huge_body_is_413(sandbox_gateway: ServedGateway, key: str) -> None:
    body = (
        b'{"model": "sandbox-chat", "messages": [{"role":"user","content":"'
        + b"x" * (21 * 1024 * 1024)
        + b'"}]}'
    )
    status, err = _post(sandbox_gateway, key, "/v1/chat/completions", body)
    assert status == 413 and err["code"] == "request_too_large"


def test_unknown_path_and_method(sandbox_gateway: ServedGateway, key: str) -> None:
    res = http(
        "GET", sandbox_gateway.base_url + "/v1/nothing-here", headers={"Authorization": f"Bearer {key}"}
    )
    assert res.status == 404 and res.json()["error"]["code"] == "unknown_url"
    res = http(
        "GET", sandbox_gateway.base_url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}
    )
    assert res.status == 405


def test_sandbox_rejects_bad_fields_with_400(sandbox_gateway: ServedGateway, key: str) -> None:
    status, _ = _post(
        sandbox_gateway,
        key,
        "/v1/embeddings",
        b'{"model": "sandbox-embedding", "input": "x", "encoding_format": "hex"}',
    )
    assert status == 400
    status, _ = _post(
        sandbox_gateway,
        key,
        "/v1/chat/completions",
        b'{"model": "sandbox-chat", "n": 0, "messages": [{"role":"user","content":"x"}]}',
    )
    assert status == 400
