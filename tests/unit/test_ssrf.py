"""SSRF guard and webhook delivery (checklist §2a/§2c, W6).

Safety: this machine has no internet and tests may only reach 127.0.0.1. An autouse fixture makes
every socket dial and every real DNS lookup fail loudly unless it targets a loopback IP literal;
host names are answered by a fake resolver injected into `GuardedResolver`.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import logging
import random
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

import unigate.transport.dial as dial
from unigate.errors import InvalidRequest, PayloadTooLarge
from unigate.tasks.outbox import OutboxDeliverer
from unigate.tasks.outbox_store import Delivery
from unigate.webhooks.fetch import fetch_url
from unigate.webhooks.sender import (
    DEFAULT_SCHEDULE,
    MAX_RETRY_AFTER,
    DeliveryResult,
    WebhookSender,
    backoff_schedule,
    classify,
    parse_retry_after,
)
from unigate.webhooks.signing import headers as sign_headers
from unigate.webhooks.signing import new_message_id, verify
from unigate.webhooks.ssrf import (
    PRIVATE_HINT,
    GuardedResolver,
    RefusedAddress,
    UnsafeURL,
    check_url,
    is_public_address,
)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BODY = b'{"id":"task_1","status":"SUCCESS"}'
PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:4700:4700::1111"

# Checklist §2c, every line that must be refused outright.
CORPUS = [
    "http://127.0.0.1/",
    "http://localhost/",
    "http://127.1/",
    "http://0.0.0.0/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://017700000001/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://100.64.0.1/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://localhost./",
    "http://LOCALHOST/",
    "http://user@127.0.0.1/",
    "http://127.0.0.1%2f@evil.example/",
    "http://127.0.0.1./",
    "http://foo.localhost/",
    "http://db.internal/",
    "http://printer.local/",
    "http://example.com:0/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_",
    "ftp://127.0.0.1/",
    "dict://127.0.0.1:11211/",
    "http://a.example/\r\nX-Injected: 1",
    "http://a.example/ x",
    "http://a.example\\@127.0.0.1/",
    "",
]
# Hosts of the corpus that reach the resolver layer (it must refuse them on its own too).
CORPUS_HOSTS = [
    "127.0.0.1",
    "localhost",
    "127.1",
    "0.0.0.0",
    "0x7f000001",
    "2130706433",
    "017700000001",
    "::1",
    "::ffff:7f00:1",
    "169.254.169.254",
    "metadata.google.internal",
    "100.64.0.1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "fd00::1",
    "fe80::1",
    "localhost.",
    "LOCALHOST",
]


class FakeResolver:
    """Answers from a table; each entry is a list of answers, consumed one per lookup (the last
    one repeats), so a TTL-0 rebind can be scripted. Unknown names fail like NXDOMAIN (the
    transport resolver's `ConnectFailed`)."""

    def __init__(self, table: dict[str, list[list[str]]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[tuple[int, tuple[str, int]]]:
        self.calls.append(host)
        answers = self.table.get(host)
        if not answers:
            raise dial.ConnectFailed(f"fake resolver: no such host {host}")
        addrs = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, (a, port)) for a in addrs]


def _hosts(answer: list[tuple[int, tuple[str, int]]]) -> list[str]:
    return [address for _, (address, _port) in answer]


def _loopback_literal(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def dials(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every address the HTTP client dials; refuse anything but loopback (and any real
    DNS)."""
    seen: list[str] = []
    original = dial._connect_one

    async def guarded_connect(loop: Any, family: int, addr: tuple[str, int]) -> socket.socket:
        seen.append(str(addr[0]))
        if not _loopback_literal(addr[0]):
            raise AssertionError(f"test tried to dial a non-loopback address: {addr[0]}")
        return await original(loop, family, addr)

    real_getaddrinfo = socket.getaddrinfo

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback_literal(host):
            raise AssertionError(f"test tried a real DNS lookup: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(dial, "_connect_one", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield seen


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


async def _deliver(url: str, allow_private: bool, fake: FakeResolver, timeout: float = 5.0) -> DeliveryResult:
    async with WebhookSender(allow_private, inner_resolver=fake) as sender:
        hdrs = sign_headers(SECRET, new_message_id(), BODY)
        return await sender.deliver(url, BODY, hdrs, timeout=timeout)


def _assert_refused(result: DeliveryResult) -> None:
    assert not result.ok and result.permanent and result.status is None
    assert result.error.startswith("refused: ")
    assert SECRET not in result.error


# -- the corpus: refused before anything is resolved or dialled ---------------------------------


@pytest.mark.parametrize("url", CORPUS)
def test_corpus_is_refused_without_dialling(url: str, dials: list[str]) -> None:
    fake = FakeResolver({})
    result = run(_deliver(url, False, fake))
    _assert_refused(result)
    assert dials == [] and fake.calls == []


@pytest.mark.parametrize("host", CORPUS_HOSTS)
def test_resolver_layer_refuses_corpus_hosts(host: str) -> None:
    # Even if an attacker's DNS answers with the same address, the guard refuses before asking.
    fake = FakeResolver({host: [["127.0.0.1"]]})
    with pytest.raises(RefusedAddress):
        run(GuardedResolver(False, inner=fake).resolve(host, 80))
    assert fake.calls == []


@pytest.mark.parametrize("host", ["127.1", "0x7f000001", "2130706433", "017700000001", "0177.0.0.1"])
def test_numeric_forms_refused_with_default_inner_resolver(host: str) -> None:
    # getaddrinfo would read these as 127.0.0.1; the guard parses them locally and refuses first.
    async def go() -> None:
        resolver = GuardedResolver(False)
        try:
            with pytest.raises(RefusedAddress):
                await resolver.resolve(host, 80)
        finally:
            await resolver.close()

    run(go())


@pytest.mark.parametrize(
    "url, host",
    [("http://evil.example#@127.0.0.1/", "evil.example"), ("https://rebind.test/", "rebind.test")],
)
def test_dialled_host_is_resolved_and_checked_at_connect_time(url: str, host: str, dials: list[str]) -> None:
    # These pass the static check; the connect-time resolver sees the real host and refuses.
    assert check_url(url).raw_host == host
    fake = FakeResolver({host: [["127.0.0.1"]]})
    result = run(_deliver(url, False, fake))
    _assert_refused(result)
    assert fake.calls == [host] and dials == []


def test_dns_rebinding_is_caught_at_connect_time(dials: list[str]) -> None:
    # First answer public (a pre-flight check would pass), second answer loopback (TTL 0).
    fake = FakeResolver({"rebind.test": [[PUBLIC_V4], ["127.0.0.1"]]})

    async def go() -> DeliveryResult:
        first = await GuardedResolver(False, inner=fake).resolve("rebind.test", 443)
        assert _hosts(first) == [PUBLIC_V4]
        return await _deliver("https://rebind.test/hook", False, fake)

    _assert_refused(run(go()))
    assert fake.calls == ["rebind.test", "rebind.test"] and dials == []


@pytest.mark.parametrize(
    "answer", [[PUBLIC_V4, "10.0.0.5"], [PUBLIC_V6, "::1"], ["not-an-ip"], ["fe80::1%eth0"]]
)
def test_any_bad_answer_refuses_the_whole_lookup(answer: list[str], dials: list[str]) -> None:
    fake = FakeResolver({"mixed.test": [answer]})
    with pytest.raises(RefusedAddress):
        run(GuardedResolver(False, inner=fake).resolve("mixed.test", 443))
    _assert_refused(run(_deliver("https://mixed.test/", False, fake)))
    assert dials == []


def test_public_answers_are_allowed_by_the_resolver() -> None:
    # Only the resolver is asked: nothing is ever sent to a public address from tests.
    fake = FakeResolver({"public.test": [[PUBLIC_V4, PUBLIC_V6]]})
    answer = run(GuardedResolver(False, inner=fake).resolve("public.test", 443))
    assert _hosts(answer) == [PUBLIC_V4, PUBLIC_V6]


def test_allow_private_lets_private_answers_through() -> None:
    fake = FakeResolver({"rebind.test": [["127.0.0.1"]], "localhost": [["::1"]]})
    resolver = GuardedResolver(True, inner=fake)
    assert _hosts(run(resolver.resolve("rebind.test", 80))) == ["127.0.0.1"]
    assert _hosts(run(resolver.resolve("localhost", 80))) == ["::1"]


# -- static URL checks and the address policy ----------------------------------------------------


def test_check_url_accepts_normal_urls_and_any_port() -> None:
    url = check_url("http://public.example:6379/")
    assert url.port == 6379 and url.raw_host == "public.example"
    assert (
        check_url("https://Public.Example/redirect?to=http://169.254.169.254/").raw_host == "public.example"
    )
    assert check_url(f"http://{PUBLIC_V4}/x").raw_host == PUBLIC_V4
    assert check_url("http://127.0.0.1:8080/hook", allow_private=True).port == 8080
    for shape in ("ftp://127.0.0.1/", "http://user:pw@127.0.0.1/", "http://127.0.0.1:0/", "http:///x"):
        with pytest.raises(UnsafeURL):
            check_url(shape, allow_private=True)  # shape checks apply even when private is allowed
    with pytest.raises(UnsafeURL):
        check_url("https://example.com/" + "a" * 3000)


@pytest.mark.parametrize(
    "addr",
    [
        "127.0.0.1",
        "0.0.0.0",
        "0.1.2.3",
        "10.1.2.3",
        "100.64.0.1",
        "100.127.255.254",
        "169.254.169.254",
        "172.31.255.255",
        "192.168.0.1",
        "192.0.0.8",
        "192.0.2.1",
        "198.18.0.1",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "fe80::1%eth0",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b:1::1",
        "100::1",
    ],
)
def test_non_public_addresses(addr: str) -> None:
    assert not is_public_address(ipaddress.ip_address(addr))


@pytest.mark.parametrize(
    "addr", ["8.8.8.8", "1.1.1.1", PUBLIC_V4, PUBLIC_V6, "::ffff:8.8.8.8", "2002:808:808::1"]
)
def test_public_addresses(addr: str) -> None:
    assert is_public_address(ipaddress.ip_address(addr))


# -- delivery against a local receiver (127.0.0.1 only) ------------------------------------------


Handler = Callable[[web.Request], Coroutine[Any, Any, web.StreamResponse]]


@asynccontextmanager
async def receiver(routes: dict[str, Handler]) -> AsyncIterator[str]:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def test_local_receiver_gets_a_verifiable_post(dials: list[str]) -> None:
    got: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: web.Request) -> web.Response:
        got.append((dict(request.headers), await request.read()))
        return web.Response(body=b"x" * 300_000)  # larger than the read cap: still a success

    async def go() -> tuple[DeliveryResult, DeliveryResult]:
        async with receiver({"/hook": hook}) as base, WebhookSender(allow_private=True) as sender:
            msg_id = new_message_id()
            hdrs = sign_headers(SECRET, msg_id, BODY)
            first = await sender.deliver(base + "/hook", BODY, hdrs)
            second = await sender.deliver(base + "/hook", BODY, hdrs)
            return first, second

    for result in run(go()):
        assert result == DeliveryResult(ok=True, status=200, retry_after=None, error="", permanent=False)
    assert len(got) == 2
    received_headers, received_body = got[0]
    assert received_body == BODY  # the bytes sent are the bytes signed
    verify(SECRET, received_headers, received_body)
    assert received_headers["Content-Type"] == "application/json"
    assert set(dials) == {"127.0.0.1"}


def test_local_receiver_is_refused_by_default(dials: list[str]) -> None:
    hits: list[str] = []

    async def hook(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response()

    async def go() -> DeliveryResult:
        async with receiver({"/hook": hook}) as base:
            return await _deliver(base + "/hook", False, FakeResolver({}))

    _assert_refused(run(go()))
    assert hits == [] and dials == []


def _status_route(status: int, extra: dict[str, str] | None = None) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, headers=extra or {}, text="secret internal detail")

    return handler


def test_status_classification_against_local_receiver() -> None:
    hits: list[str] = []

    async def target(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response()

    routes: dict[str, Handler] = {
        "/redirect": _status_route(302, {"Location": "/target"}),
        "/permanent-redirect": _status_route(308, {"Location": "/target"}),
        "/target": target,
        "/gone": _status_route(410),
        "/busy": _status_route(503, {"Retry-After": "7"}),
        "/slow": _status_route(429),
        "/broken": _status_route(500),
        "/nocontent": _status_route(204),
    }

    async def go() -> dict[str, DeliveryResult]:
        async with receiver(routes) as base, WebhookSender(allow_private=True) as sender:
            hdrs = sign_headers(SECRET, new_message_id(), BODY)
            return {p: await sender.deliver(base + p, BODY, hdrs) for p in routes if p != "/target"}

    res = run(go())
    assert hits == []  # redirects were not followed
    for path in ("/redirect", "/permanent-redirect"):
        assert not res[path].ok and not res[path].permanent and "redirect" in res[path].error
    assert res["/redirect"].status == 302 and res["/permanent-redirect"].status == 308
    assert res["/gone"] == DeliveryResult(False, 410, None, "endpoint gone (HTTP 410)", True, gone=True)
    assert res["/busy"] == DeliveryResult(False, 503, 7.0, "HTTP 503", False)
    assert res["/slow"] == DeliveryResult(False, 429, None, "HTTP 429", False)
    assert res["/broken"] == DeliveryResult(False, 500, None, "HTTP 500", False)
    assert res["/nocontent"].ok and res["/nocontent"].status == 204
    assert all("secret" not in r.error for r in res.values())  # response bodies never echoed


def test_hanging_receiver_times_out() -> None:
    async def go() -> DeliveryResult:
        release = asyncio.Event()

        async def hang(request: web.Request) -> web.Response:
            await asyncio.wait_for(release.wait(), timeout=10)
            return web.Response()

        async with receiver({"/hang": hang}) as base, WebhookSender(allow_private=True) as sender:
            try:
                return await sender.deliver(base + "/hang", BODY, {}, timeout=0.3)
            finally:
                release.set()

    result = run(go())
    assert result == DeliveryResult(False, None, None, "timeout", False)


def test_unreachable_port_is_a_retryable_failure() -> None:
    async def go() -> DeliveryResult:
        with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        async with WebhookSender(allow_private=True) as sender:
            return await sender.deliver(f"http://127.0.0.1:{port}/", BODY, {}, timeout=2)

    result = run(go())
    assert not result.ok and not result.permanent and result.status is None
    assert result.error.startswith("connection failed")


def test_deliver_before_start_raises() -> None:
    with pytest.raises(RuntimeError):
        run(WebhookSender(allow_private=True).deliver("http://127.0.0.1:9/", BODY, {}))


# -- retry helpers --------------------------------------------------------------------------------


def test_backoff_schedule() -> None:
    rng = random.Random(1)
    assert backoff_schedule(0) == 0.0
    for attempt, base in enumerate(DEFAULT_SCHEDULE):
        for _ in range(20):
            delay = backoff_schedule(attempt, DEFAULT_SCHEDULE, rng=rng)
            assert delay is not None and base * 0.9 <= delay <= base * 1.1
    assert backoff_schedule(len(DEFAULT_SCHEDULE)) is None
    assert backoff_schedule(3, (1, 2)) is None
    assert len({backoff_schedule(1, (100,) * 2, rng=rng) for _ in range(50)}) > 1  # jittered
    with pytest.raises(ValueError):
        backoff_schedule(-1)
    assert sum(DEFAULT_SCHEDULE) > 2 * 86400  # retries span days


def test_retry_after_parsing() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("-3") is None
    assert parse_retry_after("999999999") == MAX_RETRY_AFTER
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 60) == 60.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 + 60) == 0.0
    assert classify(502, {"Retry-After": "3"}).retry_after == 3.0
    assert classify(500, {"Retry-After": "3"}).retry_after is None


def test_a_fetched_file_is_handed_on_as_sent_and_capped(dials: list[str]) -> None:
    # A compressed body is not decoded (a small answer could not expand into gigabytes), a
    # bigger one than asked for is a 413, and the Content-Type comes along.
    packed = gzip.compress(b"\0" * 1_000_000)

    async def file(request: web.Request) -> web.Response:
        headers = {"Content-Encoding": "gzip", "Content-Type": "audio/wav"}
        return web.Response(body=packed, headers=headers)

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"x" * 5000)

    async def go() -> tuple[tuple[bytes, str], Exception]:
        app = web.Application()
        app.router.add_get("/file", file)
        app.router.add_get("/big", big)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with WebhookSender(allow_private=True) as sender:
                got = await fetch_url(sender, base + "/file", len(packed), timeout=5)
                with pytest.raises(PayloadTooLarge) as too_big:
                    await fetch_url(sender, base + "/big", 1000, timeout=5)
                return got, too_big.value
        finally:
            await runner.cleanup()

    (body, content_type), _ = run(go())
    assert body == packed and content_type == "audio/wav"
    assert set(dials) == {"127.0.0.1"}


# -- what a client and the operator are told ------------------------------------------------------


def _fetch_error(url: str, fake: FakeResolver) -> InvalidRequest:
    async def go() -> InvalidRequest:
        async with WebhookSender(False, inner_resolver=fake) as sender:
            with pytest.raises(InvalidRequest) as refused:
                await fetch_url(sender, url, 1000, timeout=5)
            return refused.value

    result: InvalidRequest = run(go())
    return result


def test_a_refusal_never_tells_what_an_internal_name_resolves_to(
    dials: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeResolver({"db.corp.example": [["10.0.0.5"]], "printer.corp.example": [["192.168.7.7"]]})
    with caplog.at_level(logging.WARNING, "unigate.webhooks"):
        private = _fetch_error("http://db.corp.example/x.wav?token=t0k", fake)
        other_private = _fetch_error("http://printer.corp.example/x.wav", fake)
    unresolved = _fetch_error("http://nowhere.corp.example/x.wav", fake)
    # A name resolving to a private address is answered like a name that does not resolve.
    seen = {(e.status, e.code, e.message, e.param) for e in (private, other_private, unresolved)}
    assert len(seen) == 1, seen
    assert private.status == 400 and private.code == "url_fetch_failed" and private.param == "url"
    assert "10.0.0.5" not in private.message and "non-public" not in private.message
    # Hosts refused by their name or literal address: one reason whatever the kind.
    static = [
        _fetch_error(u, fake) for u in ("http://10.0.0.5/x", "http://db.internal/x", "http://localhost/x")
    ]
    assert {(e.code, e.message) for e in static} == {
        ("url_refused", f"The URL was refused: host is not allowed ({PRIVATE_HINT}).")
    }
    assert dials == [], "nothing was dialled"
    # The operator's log keeps the detail: which host, and the address it resolved to.
    lines = [r.getMessage() for r in caplog.records if r.name == "unigate.webhooks"]
    assert any("db.corp.example resolves to 10.0.0.5" in line for line in lines), lines
    assert all("t0k" not in line for line in lines)


class _Outbox:
    """The outbox store's writes, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def give_up(self, event_id: str, _attempts: int, error: str) -> None:
        self.calls.append(("give_up", error))

    async def retry_later(self, event_id: str, _attempts: int, _at: float, error: str) -> None:
        self.calls.append(("retry_later", error))


class _Keys:
    async def get(self, _key_id: str) -> Any:
        return type("Record", (), {"webhook_secret": SECRET})()


def _deliver_event(url: str, fake: FakeResolver, outbox: _Outbox) -> None:
    async def go() -> None:
        sender = WebhookSender(False, inner_resolver=fake)
        await sender.start()
        try:
            deliverer = OutboxDeliverer(outbox, _Keys(), sender, DEFAULT_SCHEDULE, 5.0)  # type: ignore[arg-type]
            await deliverer._deliver(Delivery("msg_1", "task-42", "key_1", url, BODY, 0))
        finally:
            await sender.aclose()

    run(go())


def test_a_webhook_refused_at_dial_time_is_failed_at_once_with_one_line(
    dials: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    outbox = _Outbox()
    fake = FakeResolver({"hooks.corp.example": [["10.0.0.5"]]})
    with caplog.at_level(logging.WARNING, "unigate.webhooks"):
        _deliver_event("https://hooks.corp.example/in?token=s3cr3t", fake, outbox)
    assert [call for call, _ in outbox.calls] == ["give_up"], "failed at once, no retry scheduled"
    lines = [r.getMessage() for r in caplog.records if r.name == "unigate.webhooks"]
    assert len(lines) == 1, lines
    assert "task-42" in lines[0] and "host hooks.corp.example" in lines[0] and "not retried" in lines[0]
    assert "s3cr3t" not in lines[0] and SECRET not in lines[0] and "/in" not in lines[0]
    assert dials == []


def test_a_webhook_that_cannot_connect_is_retried(dials: list[str]) -> None:
    outbox = _Outbox()
    _deliver_event("https://nowhere.corp.example/in", FakeResolver({}), outbox)
    assert [call for call, _ in outbox.calls] == ["retry_later"]
