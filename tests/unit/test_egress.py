"""Egress of the upstream client (transport/dial.py, pool.py) against servers and a proxy on
127.0.0.1: CONNECT and absolute-form proxying with the environment's rules, extra CA and
client certificates, Azure-style base URLs, the connection limit and its queue, the idle
reaper, response header limits, Happy Eyeballs, and running out of file descriptors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.h1_server import Peer, Server, _run, answer, call, fetch, loop, ok
from tests.support.proxy import ForwardProxy
from unigate.transport.dial import (
    Dialer,
    Proxy,
    bypassed,
    environment_proxies,
    happy_eyeballs,
    proxy_for,
    tls_context,
)
from unigate.transport.errors import ConnectFailed, ConnectionBroken, PoolExhausted, UpstreamError
from unigate.transport.pool import Pool

__all__ = ["loop"]  # the fixture, imported for the tests here

trustme = pytest.importorskip("trustme")


def _server_tls(ca: object, name: str = "localhost") -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(ctx)  # type: ignore[attr-defined]
    return ctx


def _ca_file(ca: object, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))  # type: ignore[attr-defined]
    return str(path)


# -- proxies --


def test_https_through_a_connect_proxy_with_an_extra_ca(loop: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = _ca_file(ca, tmp_path)

    async def main() -> None:
        async with Server(answer(ok(b"secure")), tls=_server_tls(ca)) as upstream, ForwardProxy() as proxy:
            dialer = Dialer(tls_context(ca_file, None, None), Proxy.parse(proxy.url))
            pool = Pool(upstream.url(host="localhost"), {}, dialer=dialer)
            try:
                assert await fetch(pool) == b"secure"
                assert await fetch(pool) == b"secure"  # the tunnel is kept alive and reused
            finally:
                await pool.aclose()
            assert proxy.requests == [f"CONNECT localhost:{upstream.port} HTTP/1.1"]
            # Without the extra CA the system store does not trust the upstream: refused.
            plain = Pool(upstream.url(host="localhost"), {}, dialer=Dialer(None, Proxy.parse(proxy.url)))
            try:
                with pytest.raises(ConnectFailed, match="TLS"):
                    await call(plain)
            finally:
                await plain.aclose()

    _run(loop, main())


def test_proxy_credentials_and_refusal(loop: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = _ca_file(ca, tmp_path)

    async def main() -> None:
        async with (
            Server(answer(ok())) as upstream,
            Server(answer(ok(b"tls")), tls=_server_tls(ca)) as secure,
            ForwardProxy(require_auth="Basic dXNlcjpwQHNz") as proxy,
        ):
            authed = proxy.url.replace("http://", "http://user:p%40ss@")
            pool = Pool(
                secure.url(host="localhost"),
                {},
                dialer=Dialer(tls_context(ca_file, None, None), Proxy.parse(authed)),
            )
            try:
                assert await fetch(pool) == b"tls"
            finally:
                await pool.aclose()
            refused = Pool(secure.url(host="localhost"), {}, dialer=Dialer(None, Proxy.parse(proxy.url)))
            try:
                with pytest.raises(ConnectFailed, match=r"refused the tunnel .*407"):
                    await call(refused)
            finally:
                await refused.aclose()
            # Plain http through the proxy: the request names the whole URL.
            plain = Pool(
                upstream.url("/v1"),
                {"Proxy-Authorization": "Basic dXNlcjpwQHNz"},
                dialer=Dialer(None, Proxy.parse(authed)),
            )
            try:
                assert await fetch(plain, "/models") == b"ok"
            finally:
                await plain.aclose()
            assert proxy.requests[-1] == f"POST http://127.0.0.1:{upstream.port}/v1/models HTTP/1.1"
            assert upstream.requests[-1].line == "POST /v1/models HTTP/1.1"

    _run(loop, main())


def test_proxy_choice_follows_config_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert proxy_for("https", "api.openai.com", None) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost, .corp.example ,10.0.0.0/8")
    assert proxy_for("https", "api.openai.com", None) == Proxy("proxy.internal", 3128, None)
    assert proxy_for("http", "api.openai.com", None) is None, "HTTPS_PROXY is for https only"
    assert proxy_for("https", "llm.corp.example", None) is None
    assert proxy_for("https", "10.1.2.3", None) is None
    assert proxy_for("https", "api.openai.com", "direct") is None
    assert proxy_for("https", "api.openai.com", "http://other:8080") == Proxy("other", 8080, None)
    assert bypassed("anything", "*") and not bypassed("evilcorp.example", "corp.example")
    with pytest.raises(ValueError, match="http:// URL"):
        Proxy.parse("socks5://proxy:1080")


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2"},  # lower case wins
        {"HTTPS_PROXY": "http://upper:1", "https_proxy": ""},  # an empty lower-case one unsets
        {"HTTP_PROXY": "http://upper:1", "NO_PROXY": "a.example", "no_proxy": "b.example"},
        {"HTTP_PROXY": "http://upper:1", "REQUEST_METHOD": "GET"},  # CGI: a client may have set it
        {"http_proxy": "http://lower:2", "REQUEST_METHOD": "GET"},
        {"Https_Proxy": "http://mixed:3", "ALL_PROXY": "http://all:4", "ftp_proxy": ""},
    ],
)
def test_environment_proxies_read_as_the_standard_library_reads_them(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    """The proxy variables are read without importing urllib.request (~0.5 MB per worker with
    http.client), with its rules: either case, lower case winning, the CGI guard."""
    import urllib.request

    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
            monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert environment_proxies() == urllib.request.getproxies_environment()


# -- TLS --


def test_client_certificate_mtls(loop: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = _ca_file(ca, tmp_path)
    client = ca.issue_cert("unigate-client")
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    client.cert_chain_pems[0].write_to_path(str(cert))
    client.private_key_pem.write_to_path(str(key))
    server_ctx = _server_tls(ca)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    ca.configure_trust(server_ctx)

    async def main() -> None:
        async with Server(answer(ok(b"mutual")), tls=server_ctx) as upstream:
            good = Pool(
                upstream.url(host="localhost"), {}, dialer=Dialer(tls_context(ca_file, str(cert), str(key)))
            )
            bad = Pool(upstream.url(host="localhost"), {}, dialer=Dialer(tls_context(ca_file, None, None)))
            try:
                assert await fetch(good) == b"mutual"
                with pytest.raises(UpstreamError):  # refused in the handshake or on first read
                    await (await call(bad)).read()
            finally:
                await good.aclose()
                await bad.aclose()

    _run(loop, main())


# -- base URLs with a query (Azure OpenAI) --


def test_base_url_query_goes_on_every_request(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok())) as upstream:
            pool = Pool(upstream.url("/openai/deployments/gpt4o?api-version=2024-10-21"), {"api-key": "k"})
            try:
                await fetch(pool, "/chat/completions")
            finally:
                await pool.aclose()
            req = upstream.requests[-1]
            assert (
                req.line == "POST /openai/deployments/gpt4o/chat/completions?api-version=2024-10-21 HTTP/1.1"
            )
            assert req.values("api-key") == ["k"]

    _run(loop, main())


# -- the connection limit, the idle reaper, header limits --


def test_connection_limit_queues_then_refuses(loop: str) -> None:
    async def slow(peer: Peer) -> None:
        while await peer.request() is not None:
            await asyncio.sleep(0.15)
            await peer.send(ok())

    async def main() -> None:
        async with Server(slow) as upstream:
            pool = Pool(upstream.url(), {}, max_connections=2)
            try:
                bodies = await asyncio.gather(*(fetch(pool) for _ in range(6)))
                assert bodies == [b"ok"] * 6
                assert upstream.connections == 2, "never more than max_connections"
                pool.max_waiting = 1
                results = await asyncio.gather(*(fetch(pool) for _ in range(4)), return_exceptions=True)
                refused = [r for r in results if isinstance(r, PoolExhausted)]
                assert len(refused) == 1 and results.count(b"ok") == 3
            finally:
                await pool.aclose()

    _run(loop, main())


def test_idle_connections_are_closed_without_traffic(loop: str) -> None:
    async def main() -> None:
        seen = asyncio.Event()

        async def handle(peer: Peer) -> None:
            await peer.request()
            await peer.send(ok())
            if await peer.closed_by_client(timeout=2.0):
                seen.set()

        async with Server(handle) as upstream:
            pool = Pool(upstream.url(), {}, keepalive=0.2)
            try:
                await fetch(pool)
                started = time.monotonic()
                await asyncio.wait_for(seen.wait(), 2.0)  # no further request needed
                assert time.monotonic() - started < 1.0
            finally:
                await pool.aclose()

    _run(loop, main())


def test_a_header_flood_fails_the_response(loop: str) -> None:
    flood = "".join(f"X-Flood-{i}: {'v' * 40}\r\n" for i in range(300))
    response = f"HTTP/1.1 200 OK\r\n{flood}Content-Length: 2\r\n\r\nok".encode()

    async def main() -> None:
        async with Server(answer(response)) as upstream:
            pool = Pool(upstream.url(), {})
            try:
                with pytest.raises(ConnectionBroken, match="headers exceed"):
                    await call(pool)
            finally:
                await pool.aclose()

    _run(loop, main())


# -- Happy Eyeballs --


def test_happy_eyeballs_moves_on_from_an_address_that_hangs(loop: str) -> None:
    async def main() -> None:
        # A listener that never accepts, its backlog full: a further connect to it hangs (the
        # SYN is dropped), like an address whose route is black-holed, but on loopback.
        stuck = socket.socket()
        stuck.bind(("127.0.0.1", 0))
        stuck.listen(0)
        fillers = []
        for _ in range(4):
            f = socket.socket()
            f.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                f.connect(stuck.getsockname())
            fillers.append(f)
        try:
            async with Server(answer(ok())) as upstream:
                addrs = [
                    (socket.AF_INET, stuck.getsockname()),
                    (socket.AF_INET, ("127.0.0.1", upstream.port)),
                ]
                started = time.monotonic()
                sock = await asyncio.wait_for(happy_eyeballs(addrs, 0.25), 5)
                elapsed = time.monotonic() - started
                assert sock.getpeername()[1] == upstream.port
                sock.close()
                assert 0.2 <= elapsed < 1.5, elapsed
                # A refused address is skipped at once, without waiting for the delay.
                closed = socket.socket()
                closed.bind(("127.0.0.1", 0))
                refused_port = closed.getsockname()[1]
                closed.close()
                started = time.monotonic()
                sock = await happy_eyeballs(
                    [
                        (socket.AF_INET, ("127.0.0.1", refused_port)),
                        (socket.AF_INET, ("127.0.0.1", upstream.port)),
                    ],
                    1.0,
                )
                sock.close()
                assert time.monotonic() - started < 0.5
        finally:
            for f in fillers:
                f.close()
            stuck.close()

    _run(loop, main())


# -- out of file descriptors: the gateway's own 503, not an upstream failure --


def test_running_out_of_file_descriptors_is_the_gateways_own_failure() -> None:
    script = textwrap.dedent(
        """
        import asyncio, os, resource, socket
        from unigate.errors import GatewayOverloaded
        from unigate.providers.base import Timeouts
        from unigate.providers.http import UpstreamHTTP

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        http = UpstreamHTTP(f"http://127.0.0.1:{listener.getsockname()[1]}", {})

        async def main():
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
            held = []
            try:
                while True:
                    held.append(os.open("/dev/null", os.O_RDONLY))
            except OSError:
                pass
            try:
                await http.post("/x", b"{}", Timeouts(1.0, 1.0, 2.0))
            except GatewayOverloaded as exc:
                print("overloaded", exc.status, exc.code)
            finally:
                for fd in held:
                    os.close(fd)

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout.strip() == "overloaded 503 gateway_overloaded", out.stderr[-2000:]
