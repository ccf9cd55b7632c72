"""SSRF corpus: every URL field the gateway dials itself (webhooks and callbacks, audio upload by
URL, the sandbox's URL inputs) against loopback, private, link-local, CGNAT and metadata
addresses in every spelling (decimal, octal, hex, short forms, IPv4-mapped, IPv4-compatible and
NAT64 IPv6), names resolving to them, odd schemes and parser tricks. A canary server listens
on the loopback port every variant points at: it must see no request at all, and every
submit must be refused with a 4xx before anything is stored. Redirects are never followed."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import HTTPResult, free_port, http
from tests.support.served import ServedGateway


@dataclass
class Canary(LoopbackServer):
    """Counts every request, whatever its method and path; optionally redirects them."""

    redirect_to: str = ""
    hits: int = 0
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._hit)

    async def _hit(self, request: web.Request) -> web.Response:
        self.hits += 1
        if self.redirect_to:
            raise web.HTTPFound(self.redirect_to)
        return web.Response(body=b"RIFF")


# This machine's own name: resolves (through /etc/hosts) to one of its own addresses.
HOSTNAME = socket.gethostname()


def _corpus(port: int) -> list[str]:
    hosts = [
        # loopback in every spelling getaddrinfo or a URL parser accepts
        "127.0.0.1", "127.1", "127.0.1", "0x7f000001", "0x7f.0.0.1", "2130706433", "017700000001",
        "0177.0.0.1", "0.0.0.0", "0", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "[64:ff9b::127.0.0.1]", "[2002:7f00:1::]",
        "localhost", "localhost.", "LOCALHOST", "api.localhost", HOSTNAME,
        # private, CGNAT, link-local and metadata
        "10.0.0.1", "172.16.0.1", "192.168.0.1", "100.64.0.1", "169.254.169.254", "2852039166",
        "[::ffff:169.254.169.254]", "[fe80::1]", "[fd00::1]", "metadata.google.internal",
        "instance-data", "[::]",
    ]  # fmt: skip
    urls = [f"http://{h}:{port}/x.wav" for h in hosts] + [f"https://{h}:{port}/x.wav" for h in hosts[:4]]
    urls += [
        "file:///etc/passwd",
        f"gopher://127.0.0.1:{port}/_x",
        f"ftp://127.0.0.1:{port}/x",
        "data:audio/wav;base64,UklGRg==",
        "javascript:alert(1)",
        f"http://user:pw@127.0.0.1:{port}/x",
        f"http://example.com\\@127.0.0.1:{port}/x",
        f"http://127.0.0.1:{port}/x\r\nX-Injected: 1",
        f"http://127.0.0.1:{port}#@example.com/x",
        f"//127.0.0.1:{port}/x",
    ]
    return urls


Field = Callable[[ServedGateway, str, str], HTTPResult]


def _music_hook(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    body = {"prompt": "la", "mv": "chirp-v4", "title": "t", "tags": "pop", "notify_hook": url}
    return http("POST", gw.base_url + "/suno/submit/music", body, {"Authorization": f"Bearer {key}"})


def _music_upload(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    return http("POST", gw.base_url + "/suno/upload/audio", {"url": url}, {"Authorization": f"Bearer {key}"})


def _kling_callback(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    body = {"prompt": "a kite", "callback_url": url}
    return http("POST", gw.base_url + "/kling/v1/videos/text2video", body, {"Authorization": f"Bearer {key}"})


def _kling_image(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    return http(
        "POST",
        gw.base_url + "/kling/v1/videos/image2video",
        {"image": url},
        {"Authorization": f"Bearer {key}"},
    )


def _vidu_lip_sync(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    body = {"video_url": url, "audio_url": url}
    return http("POST", gw.base_url + "/ent/v2/lip-sync", body, {"Authorization": f"Token {key}"})


def _vidu_callback(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    body = {"prompt": "rain", "duration": 2, "callback_url": url}
    return http("POST", gw.base_url + "/ent/v2/text2audio", body, {"Authorization": f"Token {key}"})


def _picwish_image(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    form = '--b\r\nContent-Disposition: form-data; name="image_url"\r\n\r\n' + url + "\r\n--b--\r\n"
    headers = {"X-API-KEY": key, "Content-Type": "multipart/form-data; boundary=b"}
    return http(
        "POST", gw.base_url + "/api/tasks/visual/scale", form.encode("utf-8", "surrogateescape"), headers
    )


def _unified_image(gw: ServedGateway, key: str, url: str) -> HTTPResult:
    body = {"model": "sandbox-video", "prompt": "x", "image": url}
    return http("POST", gw.base_url + "/v1/video/generations", body, {"Authorization": f"Bearer {key}"})


FIELDS: dict[str, Field] = {
    "music notify_hook": _music_hook,
    "music upload url": _music_upload,
    "kling callback_url": _kling_callback,
    "kling image": _kling_image,
    "vidu lip-sync urls": _vidu_lip_sync,
    "vidu callback_url": _vidu_callback,
    "picwish image_url": _picwish_image,
    "video image": _unified_image,
}


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    with Canary() as server:
        yield server


def test_no_corpus_url_is_ever_dialled(sandbox_gateway: ServedGateway, canary: Canary) -> None:
    key = sandbox_gateway.create_key()
    corpus = _corpus(canary.port)
    outcomes: dict[int, int] = {}
    deferred = 0
    for name, send in FIELDS.items():
        for url in corpus:
            res = send(sandbox_gateway, key, url)
            outcomes[res.status] = outcomes.get(res.status, 0) + 1
            if res.status < 300 and HOSTNAME in url and ("hook" in name or "callback" in name):
                # A hook naming a host by DNS is checked when it is dialled (the address checked
                # is the address connected to, so a rebinding name cannot slip through): the
                # submit is accepted, the delivery refused. The canary proves it.
                deferred += 1
                continue
            assert 400 <= res.status < 500, (name, url, res.status, res.body[:300])
    time.sleep(3.0)  # the sandbox's jobs change state: their webhooks are attempted meanwhile
    print(f"\nSSRF corpus: {len(corpus)} URLs x {len(FIELDS)} fields = {len(corpus) * len(FIELDS)} submits, "
          f"statuses {dict(sorted(outcomes.items()))} ({deferred} hooks by DNS name refused at delivery), "
          f"canary hits {canary.hits}")  # fmt: skip
    assert canary.hits == 0
    listing = http("GET", sandbox_gateway.base_url + "/v1/videos", headers={"Authorization": f"Bearer {key}"})
    assert listing.json()["data"] == [], "nothing was stored"


def test_redirects_are_never_followed(tmp_path: Any, canary: Canary) -> None:
    """Even where private addresses are allowed (local testing), a 3xx from a fetched URL or a
    webhook receiver is not followed to its Location."""
    with Canary(redirect_to=f"http://127.0.0.1:{canary.port}/secret") as redirector:
        env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
        config = {"sandbox": {"enabled": True, "music_seconds": 0.5}, "tasks": {"poll_interval": 0.2}}
        with ServedGateway(tmp_path, config=config, env=env) as gw:
            key = gw.create_key()
            before = canary.hits
            res = _music_upload(gw, key, f"http://127.0.0.1:{redirector.port}/song.wav")
            assert res.status == 400 and "302" in res.body.decode(), res.body
            res = _music_hook(gw, key, f"http://127.0.0.1:{redirector.port}/hook")
            assert res.status == 200
            deadline = time.monotonic() + 10
            while redirector.hits < 2 and time.monotonic() < deadline:  # the upload, then a webhook
                time.sleep(0.1)
            assert redirector.hits >= 2
            time.sleep(1.0)
            assert canary.hits == before, "a redirect was followed"
