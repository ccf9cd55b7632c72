"""A provider's configured `headers` go upstream, but never replace or duplicate its
credentials, whatever their case, in every adapter (one merge: providers/headers.py)."""

from __future__ import annotations

from pathlib import Path

import openai

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.served import ServedGateway
from unigate.providers.headers import upstream_headers


def test_merge_order_and_case() -> None:
    merged = upstream_headers(
        {"Content-Type": "application/json"},
        {"content-type": "text/plain", "AUTHORIZATION": "Bearer spoofed", "X-Team": "a"},
        {"Authorization": "Bearer real"},
    )
    assert merged == {"content-type": "text/plain", "X-Team": "a", "Authorization": "Bearer real"}


def test_configured_headers_never_override_credentials(tmp_path: Path) -> None:
    with FakeOpenAI() as oai, FakeAnthropic() as claude:
        spoof = {"authorization": "Bearer from-config", "x-api-key": "from-config", "X-Team": "blue"}
        config = {
            "providers": [
                {
                    "name": "o",
                    "protocol": "openai",
                    "base_url": oai.base_url,
                    "api_key": "sk-real",
                    "headers": spoof,
                },
                {
                    "name": "a",
                    "protocol": "anthropic",
                    "base_url": claude.base_url,
                    "api_key": "ant-real",
                    "headers": spoof,
                },
            ],
            "models": [
                {"name": "via-openai", "routes": [{"provider": "o"}]},
                {"name": "via-anthropic", "routes": [{"provider": "a"}]},
            ],
        }
        with ServedGateway(tmp_path, config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            for model in ("via-openai", "via-anthropic"):
                client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
        sent = oai.received[-1].headers
        assert sent["authorization"] == "Bearer sk-real" and sent["x-team"] == "blue"
        got = {k.lower(): v for k, v in claude.headers[-1].items()}
        assert got["x-api-key"] == "ant-real" and got["x-team"] == "blue"
        assert got["authorization"] == "Bearer from-config"  # not a credential of this protocol
