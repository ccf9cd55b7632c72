"""Vendor keys in the environment are providers beside the sandbox, listed with the models their
upstream lists (or their well-known ones), one start-up line each; `unigate providers check`
and `POST /admin/providers/check` send one cheap request through each provider and explain
what failed. Fake upstreams on 127.0.0.1; the gateway in-process."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from tests.support import config_yaml
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.in_process import InProcessGateway
from tests.support.loopback import LoopbackServer
from tests.support.net import free_port
from unigate.cli.main import app as cli
from unigate.config_source import ENV_VENDORS, default_config

VENDOR_VARIABLES = [v for vendor in ENV_VENDORS.values() for v in (*vendor.keys, *vendor.base_urls)]


@dataclass
class Scripted(LoopbackServer):
    """Answers every path with one scripted status, body and headers."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/html"
    headers: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._any)

    async def _any(self, request: web.Request) -> web.Response:
        return web.Response(
            status=self.status, body=self.body, content_type=self.content_type, headers=self.headers
        )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VENDOR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_google_api_key_and_the_vendors_base_url_variables() -> None:
    config = default_config({"GOOGLE_API_KEY": "g", "STABILITY_API_KEY": "st", "FISH_API_KEY": "f"})
    providers = {p.name: (p.protocol, p.base_url, p.api_key) for p in config.providers}
    assert providers["gemini"] == ("gemini", "https://generativelanguage.googleapis.com", "g")
    assert providers["stability"] == ("stability", "https://api.stability.ai", "st")
    routes = {m.name: m.routes[0].provider for m in config.models}
    # A real vendor's model wins over the sandbox's model of the same name.
    assert routes["sd3.5-large"] == "stability" and routes["s1"] == "fish"
    assert routes["gemini-2.5-flash"] == "gemini" and routes["sandbox-chat"] == "sandbox"
    listed = default_config({"OPENAI_API_KEY": "k"}, {"openai": ["gpt-x", "dall-e-9"]})
    families = {m.name: m.family for m in listed.models if m.routes[0].provider == "openai"}
    assert families["gpt-x"] is None and families["dall-e-9"] == "image"
    assert "gpt-4o" not in families, "the listed models replace the well-known ones"


def test_a_vendor_key_takes_the_sandbox_models_its_globs_match() -> None:
    # With OPENAI_API_KEY a moderation call is OpenAI's, with STABILITY_API_KEY every sd3* model is
    # Stability's, even those neither the upstream listed nor the well-known ids name: none is left
    # to the sandbox's fake answers. Sandbox models no vendor glob matches stay.
    config = default_config({"OPENAI_API_KEY": "k", "STABILITY_API_KEY": "st"}, {"openai": ["gpt-x"]})
    sandboxed = {m.name for m in config.models if m.routes[0].provider == "sandbox"}
    assert {"omni-moderation-latest", "text-moderation-latest", "sd3.5-flash"} & sandboxed == set()
    assert {"sandbox-chat", "sora-2", "chirp-v4"} <= sandboxed
    assert config.defines("omni-moderation-latest") and config.defines("sd3.5-flash")


def test_env_vendors_serve_the_models_their_upstreams_list(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    with (
        FakeOpenAI(models=("fake-gpt-1", "fake-gpt-2"), api_key="sk-env") as oai,
        FakeAnthropic(models=("claude-fake-1",)) as claude,
        FakeGemini(models=("gemini-fake-1",)) as gem,
    ):
        env = {
            "OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": oai.base_url,
            "ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": claude.base_url,
            "GOOGLE_API_KEY": "g-key", "GEMINI_BASE_URL": gem.base_url,
        }  # fmt: skip
        with InProcessGateway(tmp_path, env=env) as gw:
            ids = {m["id"] for m in gw.request("GET", "/v1/models", key=gw.create_key()).json()["data"]}
            assert {"fake-gpt-1", "fake-gpt-2", "claude-fake-1", "gemini-fake-1", "sandbox-chat"} <= ids
            assert "gpt-4o" not in ids, "the upstream's list replaces the well-known ids"
            chat = gw.request(
                "POST", "/v1/chat/completions", key=gw.create_key(),
                json={"model": "fake-gpt-2", "messages": [{"role": "user", "content": "Hi"}]},
            )  # fmt: skip
            assert chat.status_code == 200 and oai.received[-1].body["model"] == "fake-gpt-2"
            checked = gw.request("POST", "/admin/providers/check").json()["data"]
            assert {c["name"]: c["ok"] for c in checked} == {
                "sandbox": True, "openai": True, "anthropic": True, "gemini": True,
            }  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("provider ")]
    assert any(line.startswith("provider openai (openai at http://127.0.0.1") for line in lines), lines
    assert any("2 models: fake-gpt-1, fake-gpt-2; also any id matching gpt-*" in line for line in lines)
    assert sum(line.startswith("provider ") for line in lines) == 4, "one line per provider"


def test_an_unreachable_vendor_keeps_its_well_known_models_without_holding_start_up(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    with Scripted(status=200, body=b"") as silent:
        # A closed port for one vendor; an upstream that answers no JSON for the other.
        env = {
            "OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
            "ANTHROPIC_API_KEY": "sk", "ANTHROPIC_BASE_URL": silent.base_url,
        }  # fmt: skip
        started = time.monotonic()
        with InProcessGateway(tmp_path, env=env) as gw:
            assert time.monotonic() - started < 10
            ids = {m["id"] for m in gw.request("GET", "/v1/models", key=gw.create_key()).json()["data"]}
    assert {"gpt-4o", "claude-sonnet-4-5", "sandbox-chat"} <= ids
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("provider openai: could not list its models" in w for w in warned), warned
    assert any("provider anthropic: could not list its models" in w for w in warned), warned


def _config(providers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"providers": providers, "models": [{"name": "m", "routes": [{"provider": providers[0]["name"]}]}]}


def test_providers_check_explains_each_failure(tmp_path: Path) -> None:
    with (
        FakeOpenAI(api_key="right") as oai,
        Scripted(status=301, headers={"Location": "https://elsewhere.test/v1/models"}) as moved,
    ):
        root = oai.base_url.removesuffix("/v1")
        closed = f"http://127.0.0.1:{free_port()}/v1"
        nowhere, tls = "http://no-such-host.invalid/v1", oai.base_url.replace("http:", "https:")
        providers = [
            {"name": "good", "protocol": "openai", "base_url": oai.base_url, "api_key": "right"},
            {"name": "badkey", "protocol": "openai", "base_url": oai.base_url, "api_key": "wrong"},
            {"name": "nov1", "protocol": "openai", "base_url": root, "api_key": "right"},
            {"name": "nodns", "protocol": "openai", "base_url": nowhere, "api_key": "k"},
            {"name": "closed", "protocol": "openai", "base_url": closed, "api_key": "k"},
            {"name": "tls", "protocol": "openai", "base_url": tls, "api_key": "k"},
            {"name": "moved", "protocol": "openai", "base_url": moved.base_url + "/v1", "api_key": "k"},
        ]  # fmt: skip
        with InProcessGateway(tmp_path, _config(providers)) as gw:
            res = gw.request("POST", "/admin/providers/check")
            assert res.status_code == 200, res.text
            found = {c["name"]: c for c in res.json()["data"]}
            denied = gw.request("POST", "/admin/providers/check", key="ugk_not_admin")
            assert denied.status_code == 401
        path = tmp_path / "cli.yaml"
        path.write_text(config_yaml.dump(_config(providers)))
        result = CliRunner().invoke(cli, ["providers", "check", "--config", str(path), "--timeout", "5"])
    assert found["good"]["ok"] is True and found["good"]["models"] == ["fake-gpt-1", "fake-gpt-2"]
    assert found["badkey"]["ok"] is False and "HTTP 401" in found["badkey"]["problem"]
    assert "api_key" in found["badkey"]["fix"]
    assert "HTTP 404" in found["nov1"]["problem"] and f"try {root}/v1" in found["nov1"]["fix"]
    assert found["nodns"]["problem"].startswith("DNS: no-such-host.invalid does not resolve")
    assert found["closed"]["problem"].startswith("connect:")
    assert found["tls"]["problem"].startswith("TLS:") and "http://" in found["tls"]["fix"]
    assert "HTTP 301" in found["moved"]["problem"] and "redirects" in found["moved"]["problem"]
    assert all("wrong" not in str(c) and "right" not in str(c["problem"]) for c in found.values())
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"good (openai at {oai.base_url}): ok, 2 models listed")
    assert any(line.startswith("nov1 ") and "FAILED: HTTP 404" in line and "/v1" in line for line in lines)
    assert len(lines) == len(providers)
