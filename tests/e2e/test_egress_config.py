"""Egress settings through the real gateway: a provider's `proxy`, HTTP(S)_PROXY and NO_PROXY
from the environment, the `azure` protocol with its query-string base URL and `api-key`, and
egress files checked at start-up."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess, serve_refused
from tests.support.proxy import ThreadedProxy

pytestmark = pytest.mark.process


def _chat(gw: GatewayProcess, model: str) -> str:
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    return reply.choices[0].message.content or ""


def _config(base_url: str, **provider: object) -> dict[str, object]:
    return {
        "providers": [
            {"name": "up", "protocol": "openai", "base_url": base_url, "api_key": "sk-up", **provider}
        ],
        "models": [{"name": "m", "routes": [{"provider": "up"}]}],
    }


def test_provider_proxy_and_environment_proxy(tmp_path: Path) -> None:
    for sub in "abcd":
        (tmp_path / sub).mkdir()
    with FakeOpenAI() as fake, ThreadedProxy() as proxy:
        target = f"POST {fake.base_url}/chat/completions HTTP/1.1"
        with GatewayProcess(tmp_path / "a", config=_config(fake.base_url, proxy=proxy.url)) as gw:
            assert _chat(gw, "m")
        assert proxy.requests == [target], "the provider's proxy carried the call"
        env = {"HTTP_PROXY": proxy.url, "NO_PROXY": ""}
        with GatewayProcess(tmp_path / "b", config=_config(fake.base_url), env=env) as gw:
            assert _chat(gw, "m")
        assert proxy.requests == [target, target], "HTTP_PROXY from the environment"
        env = {"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,127.0.0.1"}
        with GatewayProcess(tmp_path / "c", config=_config(fake.base_url), env=env) as gw:
            assert _chat(gw, "m")
        with GatewayProcess(
            tmp_path / "d", config=_config(fake.base_url, proxy="direct"), env={"HTTP_PROXY": proxy.url}
        ) as gw:
            assert _chat(gw, "m")
        assert len(proxy.requests) == 2, "NO_PROXY and `proxy: direct` bypass it"
        assert len(fake.received) == 4


def test_azure_protocol(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        config = {
            "providers": [
                {
                    "name": "az",
                    "protocol": "azure",
                    "base_url": f"{fake.base_url}?api-version=2024-10-21",
                    "api_key": "azure-key",
                }
            ],
            "models": [{"name": "gpt-4o", "routes": [{"provider": "az"}]}],
        }
        with GatewayProcess(tmp_path, config=config) as gw:
            assert _chat(gw, "gpt-4o")
        sent = fake.received[-1]
        assert sent.path.endswith("/chat/completions")
        assert sent.headers["api-key"] == "azure-key" and "authorization" not in sent.headers


def test_missing_egress_files_stop_the_start(tmp_path: Path) -> None:
    _, proc = serve_refused(
        tmp_path,
        "providers: [{name: up, protocol: openai, base_url: 'https://x', ca_file: /nonexistent/ca.pem}]\n",
    )
    assert proc.returncode == 2 and "providers[0]: ca_file: no file at /nonexistent/ca.pem" in proc.stderr
    _, proc = serve_refused(
        tmp_path, "providers: [{name: up, protocol: openai, base_url: 'https://x', proxy: 'socks5://p:1'}]\n"
    )
    assert proc.returncode == 2 and "not an http:// proxy URL" in proc.stderr
