"""An upstream that has no API where the provider points (a base_url missing `/v1`, a web page)
is a 502 in the client's own error shape naming the provider, the upstream status and path and
the fix, with a warning line; a malformed base_url stops start-up with one line naming the file,
the provider and the value. The gateway in-process, fake upstreams on 127.0.0.1."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.in_process import InProcessGateway
from tests.unit.test_env_providers import Scripted
from unigate.cli.serve import _check_config
from unigate.cli.startup import StartupError
from unigate.settings import Settings

ASK = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
PAGE = b"<!doctype html><html><body><h1>404 Not Found</h1></body></html>"


def _one(base_url: str) -> dict[str, object]:
    provider = {"name": "upstream-a", "protocol": "openai", "base_url": base_url, "api_key": "k"}
    return {"providers": [provider], "models": [{"name": "m", "routes": [{"provider": "upstream-a"}]}]}


def test_a_base_url_without_v1_is_a_502_naming_provider_status_path_and_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="unigate")
    with FakeOpenAI() as oai, InProcessGateway(tmp_path, _one(oai.base_url.removesuffix("/v1"))) as gw:
        key = gw.create_key()
        res = gw.request("POST", "/v1/chat/completions", key=key, json=ASK)
        claude = gw.request(
            "POST", "/v1/messages", key=key, headers={"anthropic-version": "2023-06-01"},
            json={**ASK, "max_tokens": 5},
        )  # fmt: skip
    assert res.status_code == 502, res.text
    error = res.json()["error"]
    assert error["code"] == "upstream_unavailable"
    message = error["message"]
    assert "provider upstream-a" in message and "HTTP 404 at /chat/completions" in message, message
    assert "base_url probably lacks /v1" in message, message
    # The Anthropic client gets the same explanation in Anthropic's error shape.
    assert claude.status_code == 502 and claude.json()["type"] == "error", claude.text
    assert "HTTP 404 at /chat/completions" in claude.json()["error"]["message"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("upstream-a/m failed" in w and "HTTP 404 at /chat/completions" in w for w in warned), warned


def test_an_html_page_is_a_502_naming_its_status_and_path(tmp_path: Path) -> None:
    with (
        Scripted(status=404, body=PAGE) as site,
        InProcessGateway(tmp_path, _one(site.base_url + "/api")) as gw,
    ):
        res = gw.request("POST", "/v1/chat/completions", key=gw.create_key(), json=ASK)
    assert res.status_code == 502, res.text
    message = res.json()["error"]["message"]
    assert "HTTP 404 at /api/chat/completions" in message and "lacks /v1" in message, message
    assert "rejected the request" not in message
    (tmp_path / "b").mkdir()
    with (
        Scripted(status=400, body=PAGE) as site,
        InProcessGateway(tmp_path / "b", _one(site.base_url + "/v1")) as gw,
    ):
        res = gw.request("POST", "/v1/chat/completions", key=gw.create_key(), json=ASK)
    assert res.status_code == 502, res.text
    message = res.json()["error"]["message"]
    assert "not its API's JSON (HTTP 400 at /v1/chat/completions)" in message, message


def test_a_malformed_base_url_is_one_start_up_line(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(
        "providers:\n  - {name: main, protocol: openai, base_url: 'api.openai.com/v1', api_key: k}\n"
        "models: [{name: m, routes: [{provider: main}]}]\n"
    )
    settings = Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path / "data"), "UNIGATE_CONFIG": str(path)})
    with pytest.raises(StartupError) as info:
        _check_config(settings)
    message = str(info.value)
    assert str(path) in message and "provider 'main'" in message and "'api.openai.com/v1'" in message
    assert "ValueError" not in message and "\n" not in message
