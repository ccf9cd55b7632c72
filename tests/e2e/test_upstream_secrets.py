"""No upstream echo ever carries the gateway's own credentials to a client or into its log.

One fake upstream (`FakeEcho`) answers every protocol with errors that quote the credentials
it received - `Authorization` (Bearer keys, Kling's per-request JWT), `x-api-key`, `api-key`,
`x-goog-api-key`, `X-API-KEY`, `Token`, a configured credential header - in its error bodies
and headers: 4xx answers relayed in each family's shape, 429s whose Retry-After quotes them,
errors inside streams (same-format and translated), errors in a 200 envelope, and failed jobs
whose reason quotes them. Every credential value the fake saw is looked for in every status
line, header and body the clients got, and in the gateway's log."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_echo import FakeEcho
from tests.support.media_fixtures import make_image
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

PNG_1PX = make_image(1, 1)


def _secret(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(16)}"


@pytest.fixture(scope="module")
def keys() -> dict[str, str]:
    return {
        "openai": _secret("sk-oa"),
        "custom": _secret("tok-hdr"),
        "azure": _secret("az"),
        "anthropic": _secret("sk-ant"),
        "gemini": _secret("AIza"),
        "fish": _secret("fish"),
        "stability": _secret("sk-st"),
        "suno": _secret("suno"),
        "kling": f"{_secret('ak')}:{_secret('sk')}",
        "vidu": _secret("vidu"),
        "picwish": _secret("pw"),
    }


@pytest.fixture(scope="module")
def echo() -> Iterator[FakeEcho]:
    with FakeEcho() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, echo: FakeEcho, keys: dict[str, str]
) -> Iterator[ServedGateway]:
    url = echo.url

    def provider(name: str, protocol: str, base: str, **extra: Any) -> dict[str, Any]:
        return {"name": name, "protocol": protocol, "base_url": base, "api_key": keys[name], **extra}

    def routes(provider_name: str, *models: str) -> list[dict[str, Any]]:
        return [{"name": m, "routes": [{"provider": provider_name}]} for m in models]

    config: dict[str, Any] = {
        "providers": [
            provider("openai", "openai", f"{url}/openai/v1", headers={"X-Custom-Token": keys["custom"]}),
            provider("azure", "azure", f"{url}/azure/openai/deployments/d?api-version=2024-10-21"),
            provider("anthropic", "anthropic", f"{url}/anthropic"),
            provider("gemini", "gemini", f"{url}/gemini"),
            provider("fish", "fish", f"{url}/fish"),
            provider("stability", "stability", f"{url}/stability"),
            provider("suno", "suno", f"{url}/suno"),
            provider("kling", "kling", f"{url}/kling"),
            provider("vidu", "vidu", f"{url}/vidu"),
            provider("picwish", "picwish", f"{url}/picwish"),
        ],
        "models": [
            *routes("openai", "oa-*"),
            *routes("azure", "az-*"),
            *routes("anthropic", "an-*"),
            *routes("gemini", "ge-*"),
            *routes("fish", "fi-*"),
            *routes("stability", "stable-image-core"),
            *routes("suno", "su-*"),
            *routes("kling", "kl-*"),
            *routes("vidu", "vi-*"),
            *routes("picwish", "picwish/*"),
        ],
        "routing": {"cooldown_after_failures": 1000},
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.4},
    }
    with ServedGateway(tmp_path_factory.mktemp("secrets"), config=config) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def key(gw: ServedGateway) -> str:
    return gw.create_key()


def _leaks(echo: FakeEcho, keys: dict[str, str], text: str) -> list[str]:
    """Credential values (as received by the upstream, and as configured) found in `text`."""
    values = set(echo.credentials) | set(keys.values())
    values |= {part for value in keys.values() for part in value.split(":")}
    return sorted(v for v in values if len(v) >= 8 and v in text)


def _everything(res: HTTPResult) -> str:
    head = "\n".join(f"{k}: {v}" for k, v in res.headers.items())
    return f"{res.status}\n{head}\n{res.body.decode('utf-8', 'replace')}"


def _check(echo: FakeEcho, keys: dict[str, str], res: HTTPResult, statuses: tuple[int, ...]) -> str:
    assert res.status in statuses, (res.status, res.body[:500])
    seen = _everything(res)
    assert not _leaks(echo, keys, seen), seen
    return seen


CHAT = [{"role": "user", "content": "hi"}]
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]


def _calls(key: str) -> list[tuple[str, str, str, Any, dict[str, str], tuple[int, ...]]]:
    """(name, method, path, body, headers, statuses the client may get)."""
    bearer = {"Authorization": f"Bearer {key}"}
    goog = {"x-goog-api-key": key}
    form = b'--b\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na lighthouse\r\n--b--\r\n'
    image_form = (
        b'--b\r\nContent-Disposition: form-data; name="image_file"; filename="a.png"\r\n'
        b"Content-Type: image/png\r\n\r\n" + PNG_1PX + b"\r\n--b--\r\n"
    )
    multipart = {"Content-Type": "multipart/form-data; boundary=b"}
    return [
        (
            "openai chat",
            "POST",
            "/v1/chat/completions",
            {"model": "oa-chat", "messages": CHAT},
            bearer,
            (400,),
        ),
        (
            "openai chat stream",
            "POST",
            "/v1/chat/completions",
            {"model": "oa-chat", "messages": CHAT, "stream": True},
            bearer,
            (400,),
        ),
        (
            "openai 429",
            "POST",
            "/v1/chat/completions",
            {"model": "oa-ratelimit", "messages": CHAT},
            bearer,
            (429,),
        ),
        ("openai embeddings", "POST", "/v1/embeddings", {"model": "oa-emb", "input": "x"}, bearer, (400,)),
        (
            "openai images",
            "POST",
            "/v1/images/generations",
            {"model": "oa-image", "prompt": "x"},
            bearer,
            (400,),
        ),
        (
            "openai speech",
            "POST",
            "/v1/audio/speech",
            {"model": "oa-tts", "input": "x", "voice": "alloy"},
            bearer,
            (400,),
        ),
        ("openai videos", "POST", "/v1/videos", {"model": "oa-video", "prompt": "x"}, bearer, (400,)),
        (
            "azure chat",
            "POST",
            "/v1/chat/completions",
            {"model": "az-chat", "messages": CHAT},
            bearer,
            (400,),
        ),
        (
            "anthropic native",
            "POST",
            "/v1/messages",
            {"model": "an-chat", "max_tokens": 10, "messages": CHAT},
            {"x-api-key": key},
            (400,),
        ),
        (
            "anthropic translated",
            "POST",
            "/v1/chat/completions",
            {"model": "an-chat", "messages": CHAT},
            bearer,
            (400,),
        ),
        (
            "gemini native",
            "POST",
            "/v1beta/models/ge-chat:generateContent",
            {"contents": CONTENTS},
            goog,
            (400,),
        ),
        (
            "gemini translated",
            "POST",
            "/v1/chat/completions",
            {"model": "ge-chat", "messages": CHAT},
            bearer,
            (400,),
        ),
        (
            "veo submit",
            "POST",
            "/v1beta/models/ge-veo:predictLongRunning",
            {"instances": [{"prompt": "a boat"}]},
            goog,
            (400,),
        ),
        ("fish tts", "POST", "/fish/v1/tts", {"text": "hi"}, {**bearer, "model": "fi-tts"}, (400,)),
        (
            "stability",
            "POST",
            "/stability/v2beta/stable-image/generate/core",
            form,
            {**bearer, **multipart, "Accept": "application/json"},
            (400,),
        ),
        ("suno", "POST", "/suno/submit/music", {"prompt": "[Verse] x", "mv": "su-music"}, bearer, (400,)),
        (
            "suno envelope",
            "POST",
            "/suno/submit/music",
            {"prompt": "[Verse] envelope", "mv": "su-music"},
            bearer,
            (400,),
        ),
        (
            "kling",
            "POST",
            "/kling/v1/videos/text2video",
            {"model_name": "kl-video", "prompt": "x"},
            bearer,
            (400,),
        ),
        (
            "kling envelope",
            "POST",
            "/kling/v1/videos/text2video",
            {"model_name": "kl-video", "prompt": "envelope"},
            bearer,
            (400,),
        ),
        (
            "vidu",
            "POST",
            "/ent/v2/text2audio",
            {"model": "vi-audio", "prompt": "rain"},
            {"Authorization": f"Token {key}"},
            (400,),
        ),
        ("picwish", "POST", "/api/tasks/visual/scale", image_form, {"X-API-KEY": key, **multipart}, (400,)),
        (
            "picwish envelope",
            "POST",
            "/api/tasks/visual/scale?envelope=1",
            image_form,
            {"X-API-KEY": key, **multipart},
            (400,),
        ),
    ]


def test_error_answers_never_carry_upstream_credentials(
    gw: ServedGateway, echo: FakeEcho, keys: dict[str, str], key: str
) -> None:
    redacted = 0
    for name, method, path, body, headers, statuses in _calls(key):
        res = http(method, gw.base_url + path, body, headers)
        seen = _check(echo, keys, res, statuses)
        redacted += "[redacted]" in seen
        if res.status == 429:
            assert "retry-after" not in res.headers or res.headers["retry-after"].isdigit(), (
                name,
                res.headers,
            )
    # The upstreams' words still reach the client, only without the credentials.
    assert redacted >= 15, redacted
    assert any(c.startswith("eyJ") for c in echo.credentials), "Kling's JWT was sent and echoed"
    assert {"Bearer " + keys["openai"], keys["azure"], keys["anthropic"], keys["gemini"]} <= echo.credentials


@pytest.mark.parametrize(
    ("path", "body", "auth"),
    [
        ("/v1/chat/completions", {"model": "oa-inband", "messages": CHAT, "stream": True}, "bearer"),
        ("/v1/chat/completions", {"model": "an-inband", "messages": CHAT, "stream": True}, "bearer"),
        ("/v1/chat/completions", {"model": "ge-inband", "messages": CHAT, "stream": True}, "bearer"),
        (
            "/v1/messages",
            {"model": "an-inband", "max_tokens": 10, "messages": CHAT, "stream": True},
            "x-api-key",
        ),
        ("/v1beta/models/ge-inband:streamGenerateContent?alt=sse", {"contents": CONTENTS}, "goog"),
    ],
)
def test_errors_inside_streams_are_scrubbed(
    gw: ServedGateway,
    echo: FakeEcho,
    keys: dict[str, str],
    key: str,
    path: str,
    body: dict[str, Any],
    auth: str,
) -> None:
    headers = {
        "bearer": {"Authorization": f"Bearer {key}"},
        "x-api-key": {"x-api-key": key},
        "goog": {"x-goog-api-key": key},
    }[auth]
    res = http("POST", gw.base_url + path, body, headers)
    seen = _check(echo, keys, res, (200,))
    assert "error" in seen and "[redacted]" in seen, seen


def test_failed_jobs_quoting_credentials_are_scrubbed(
    gw: ServedGateway, echo: FakeEcho, keys: dict[str, str], key: str
) -> None:
    bearer = {"Authorization": f"Bearer {key}"}
    kling = http("POST", gw.base_url + "/kling/v1/videos/text2video",
                 {"model_name": "kl-video", "prompt": "pollfail"}, bearer)  # fmt: skip
    assert kling.status == 200, kling.body
    kling_id = kling.json()["data"]["task_id"]
    vidu = http("POST", gw.base_url + "/ent/v2/text2audio", {"model": "vi-audio", "prompt": "pollfail"},
                {"Authorization": f"Token {key}"})  # fmt: skip
    assert vidu.status == 200, vidu.body
    vidu_id = vidu.json()["task_id"]
    deadline = time.monotonic() + 30
    while True:
        k = http("GET", gw.base_url + f"/kling/v1/videos/text2video/{kling_id}", headers=bearer)
        v = http(
            "GET",
            gw.base_url + f"/ent/v2/tasks/{vidu_id}/creations",
            headers={"Authorization": f"Token {key}"},
        )
        if k.json()["data"]["task_status"] == "failed" and v.json()["state"] == "failed":
            break
        assert time.monotonic() < deadline, (k.body, v.body)
        time.sleep(0.3)
    for res in (k, v):
        seen = _check(echo, keys, res, (200,))
        assert "[redacted]" in seen, seen
    record = gw.admin("GET", f"/admin/tasks/{kling_id}")
    _check(echo, keys, record, (200,))


def test_nothing_reached_the_log(gw: ServedGateway, echo: FakeEcho, keys: dict[str, str], key: str) -> None:
    # Runs after the others in this module: everything they made the gateway log.
    test_error_answers_never_carry_upstream_credentials(gw, echo, keys, key)
    log = gw.log()
    assert "route openai/oa-ratelimit failed" in log or "oa-ratelimit" in log
    assert not _leaks(echo, keys, log), _leaks(echo, keys, log)
    assert "eyJ" not in log


def test_redactor_forms(tmp_path: Path) -> None:
    """The forms an echo takes: JSON-escaped, percent-encoded, base64, parts of a key pair."""
    from unigate.config import ProviderConfig
    from unigate.providers.redact import Redactor

    headers = {"X-Api-Token": "hdr-0123456789", "anthropic-version": "2023-06-01"}
    pair = "ak-1234567890" + ":" + "sk/+abcdefghij"  # an access/secret pair, as Kling's
    config = ProviderConfig(name="p", protocol="openai", api_key=pair, headers=headers)
    r = Redactor.for_provider(config)
    for leaked in ("ak-1234567890", "sk/+abcdefghij", "sk\\/+abcdefghij", "sk%2F%2Babcdefghij",
                   "hdr-0123456789", "Basic YWstMTIzNDU2Nzg5MDpzay8rYWJjZGVmZ2hpag=="):  # fmt: skip
        assert "abcdefghij" not in r.text(f"echo: {leaked} end") and "0123456789" not in r.text(leaked), (
            leaked
        )
    assert r.text("anthropic-version: 2023-06-01") == "anthropic-version: 2023-06-01"
    assert r.text("max_tokens=4096; Token limit reached") == "max_tokens=4096; Token limit reached"
