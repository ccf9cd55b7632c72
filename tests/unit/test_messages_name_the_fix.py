"""Refusals a new user meets first say what is wrong and how to fix it: the admin key or a key
without `Bearer` on an API call, a wrong metrics token, an unknown model, a multipart body sent
to a JSON endpoint, a path without its /v1 (or a Gemini one without /v1beta); and the gateway's
root is a page of links. The gateway in-process, with its default (sandbox) configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.in_process import InProcessGateway
from unigate.settings import Settings

CHAT = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    gateway = InProcessGateway(tmp_path_factory.mktemp("fix"))
    gateway.settings = Settings.from_env(
        {
            "UNIGATE_DATA_DIR": str(gateway.workdir / "data"),
            "UNIGATE_ADMIN_KEY": gateway.admin_key,
            "UNIGATE_METRICS_TOKEN": "metrics-token-for-tests",
        }
    )
    with gateway:
        yield gateway


def _message(res: object) -> str:
    body = res.json()  # type: ignore[attr-defined]
    return str(body["error"]["message"])


def test_the_admin_key_on_an_api_call_says_which_key_to_send(gw: InProcessGateway) -> None:
    res = gw.request("POST", "/v1/chat/completions", key=gw.admin_key, json=CHAT)
    assert res.status_code == 401
    message = _message(res)
    assert "admin key" in message and "unigate keys create" in message and "POST /admin/keys" in message
    assert gw.admin_key not in message


def test_a_key_without_bearer_says_to_add_it(gw: InProcessGateway) -> None:
    key = gw.create_key()
    res = gw.request("POST", "/v1/chat/completions", key=key, headers={"Authorization": key}, json=CHAT)
    assert res.status_code == 401
    message = _message(res)
    assert "Authorization: Bearer ugk_" in message and "without its scheme" in message
    assert key not in message
    basic = gw.request("GET", "/v1/models", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert "scheme 'Basic' is not accepted" in _message(basic) and "dXNlcjpwYXNz" not in _message(basic)
    vendor = gw.request("GET", "/v1/models", key="sk-proj-abcdef")
    assert "start with 'ugk_'" in _message(vendor) and "sk-proj" not in _message(vendor)


def test_a_wrong_metrics_token_names_the_metrics_token(gw: InProcessGateway) -> None:
    res = gw.request("GET", "/metrics", key="not-the-token")
    assert res.status_code == 401
    assert "Invalid metrics token" in res.text and "UNIGATE_METRICS_TOKEN" in res.text
    assert gw.request("GET", "/metrics", key="metrics-token-for-tests").status_code == 200
    admin = gw.request("GET", "/admin/keys", key="not-the-admin-key")
    assert "Invalid admin key" in _message(admin) and "admin_key file" in _message(admin)


def test_an_unknown_model_points_at_the_list_and_the_nearest_ids(gw: InProcessGateway) -> None:
    res = gw.request(
        "POST", "/v1/chat/completions", key=gw.create_key(), json={**CHAT, "model": "sandbox-chta"}
    )
    assert res.status_code == 404
    message = _message(res)
    assert "Did you mean 'sandbox-chat'" in message and "GET /v1/models" in message
    assert "sandbox-*" in message


def test_a_wrong_kind_of_model_reads_as_english(gw: InProcessGateway) -> None:
    res = gw.request(
        "POST", "/v1/chat/completions", key=gw.create_key(), json={**CHAT, "model": "sandbox-image"}
    )
    assert res.status_code == 404 and "is an image model" in _message(res)


def test_multipart_to_a_json_endpoint_says_it_takes_json(gw: InProcessGateway) -> None:
    res = gw.request(
        "POST", "/v1/chat/completions", key=gw.create_key(), files={"model": (None, "sandbox-chat")}
    )
    assert res.status_code == 400
    message = _message(res)
    assert "takes a JSON body (Content-Type: application/json)" in message
    assert "sent multipart/form-data" in message and "boundary" not in message


def test_a_path_without_v1_suggests_it(gw: InProcessGateway) -> None:
    res = gw.request("POST", "/chat/completions", key=gw.create_key(), json=CHAT)
    assert res.status_code == 404
    assert "Did you mean POST /v1/chat/completions?" in _message(res)
    other = gw.request("POST", "/no/such/thing", key=gw.create_key(), json=CHAT)
    assert other.status_code == 404 and "Did you mean" not in _message(other)


def test_a_gemini_path_without_v1beta_suggests_it_in_googles_shape(gw: InProcessGateway) -> None:
    # LiteLLM's gemini/ models with the gateway's root as api_base call the bare method path.
    body = {"contents": [{"parts": [{"text": "Hi"}]}]}
    res = gw.request(
        "POST", "/models/sandbox-chat:generateContent", headers={"x-goog-api-key": gw.create_key()}, json=body
    )
    assert res.status_code == 404
    error = res.json()["error"]
    assert error["status"] == "NOT_FOUND" and error["code"] == 404  # Google's error shape
    assert "Did you mean POST /v1beta/models/sandbox-chat:generateContent?" in error["message"]
    assert "LiteLLM's gemini/ models" in error["message"]


def test_the_root_is_a_page_of_links(gw: InProcessGateway) -> None:
    page = gw.request("GET", "/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for link in ('href="/docs"', 'href="/dashboard"', 'href="/v1/models"'):
        assert link in page.text
    data = gw.request("GET", "/")
    assert data.status_code == 200 and data.headers["content-type"].startswith("application/json")
    assert data.json()["links"]["docs"] == "/docs" and data.json()["links"]["models"] == "/v1/models"
