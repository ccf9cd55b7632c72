"""The HTTP/1.1 server protocol (`edge/h1_protocol.py`, `h1_cycle.py`, `h1_head.py`) driven
byte by byte through a recording transport: framing, one write per sized reply, replies held to
the end of the turn while two requests are under way, pipelining,
100-continue, HEAD, chunked bodies, refused header values, disconnects, flow control both ways,
keep-alive and shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from unigate.cli.launch import uvicorn_options
from unigate.edge.asgi import Request
from unigate.edge.h1_protocol import H1Protocol
from unigate.edge.server_guard import IDLE

Message = dict[str, Any]
App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
POST = b"POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"


class Transport:
    """Records writes; closing reports the loss to the protocol on the next loop turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.writes: list[bytes] = []
        self.closed = False
        self.reading = True
        self.protocol: H1Protocol | None = None

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.writes.append(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            assert self.protocol is not None
            self.loop.call_soon(self.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    @property
    def data(self) -> bytes:
        return b"".join(self.writes)


class Conn:
    def __init__(self, app: App, **config: Any) -> None:
        self.loop = asyncio.get_running_loop()
        self.state = ServerState()
        self.state.default_headers = [(b"date", b"Thu, 01 Jan 2026 00:00:00 GMT"), (b"server", b"uvicorn")]
        options = {**uvicorn_options(), "lifespan": "off", **config}
        cfg = uvicorn.Config(app, log_config=None, **options)
        self.protocol: H1Protocol = options["http"](cfg, self.state, {}, _loop=self.loop)
        self.transport = Transport(self.loop)
        self.transport.protocol = self.protocol
        self.protocol.connection_made(self.transport)

    def feed(self, data: bytes) -> None:
        self.protocol.data_received(data)

    async def settle(self, turns: int = 10) -> None:
        for _ in range(turns):
            await asyncio.sleep(0)


def run(coro: Awaitable[None]) -> None:
    async def main() -> None:
        await coro

    asyncio.run(main())


def sized(body: bytes = b"ok", status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> App:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        extra = headers or []
        length = [(b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": length + extra})
        await send({"type": "http.response.body", "body": body})

    return app


def test_a_sized_reply_leaves_in_one_write_and_the_connection_stays_open() -> None:
    scopes: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scopes.append(scope)
        await sized(b'{"a":1}', headers=[(b"content-type", b"application/json")])(scope, receive, send)

    async def main() -> None:
        conn = Conn(app)
        conn.feed(POST)
        await conn.settle()
        assert conn.transport.writes == [
            b"HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"
            b'content-length: 7\r\ncontent-type: application/json\r\n\r\n{"a":1}'
        ]
        assert not conn.transport.closed and conn.protocol.phase == IDLE
        conn.feed(b"GET /b%20c HTTP/1.1\r\nHost: h\r\n\r\n")
        await conn.settle()
        assert len(conn.transport.writes) == 2 and conn.state.total_requests == 2
        first, second = scopes
        assert first["path"] == "/v1/x" and first["query_string"] == b"a=1" and first["method"] == "POST"
        assert second["path"] == "/b c" and second["raw_path"] == b"/b%20c"
        assert set(first) == {
            "type", "asgi", "http_version", "method", "scheme", "path", "raw_path",
            "query_string", "root_path", "headers", "client", "server", "state", "extensions",
        }  # fmt: skip
        assert first["extensions"] == {"unigate.response": {}}
        assert first["headers"] == [(b"host", b"h"), (b"content-length", b"5")]
        assert first["client"] == ("127.0.0.1", 5000) and first["server"] == ("127.0.0.1", 8000)

    run(main())


class Limited:
    """A limited key's `ExtraHeaders` (edge/asgi.py)."""

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"x-ratelimit-limit-requests", b"10")]

    def lines(self) -> tuple[bytes, int]:
        return b"x-ratelimit-limit-requests: 10\r\n", 1


def whole(
    body: bytes = b"ok",
    status: int = 200,
    extra: list[tuple[bytes, bytes]] | None = None,
    limited: bool = False,
) -> App:
    """An app answering through `Request.respond`, as the gateway's replies and errors do."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        request = Request(scope, receive, send, "req-1")
        if limited:
            request.more_headers = Limited()
        await request.respond(status, body, b"application/json", extra or [])
        assert request.status == status

    return app


WHOLE_HEAD = b"HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"


def test_a_whole_response_message_leaves_in_one_write_with_its_framing() -> None:
    async def main() -> None:
        conn = Conn(whole(b'{"a":1}', extra=[(b"x-extra", b"v")], limited=True))
        conn.feed(POST)
        await conn.settle()
        assert conn.transport.writes == [
            WHOLE_HEAD + b"content-type: application/json\r\nx-request-id: req-1\r\nx-extra: v\r\n"
            b'x-ratelimit-limit-requests: 10\r\ncontent-length: 7\r\n\r\n{"a":1}'
        ]
        assert not conn.transport.closed and conn.protocol.phase == IDLE
        # The next request on the connection, a HEAD: the head alone, its length announced.
        conn.feed(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
        await conn.settle()
        assert conn.transport.writes[1].endswith(b"limit-requests: 10\r\ncontent-length: 7\r\n\r\n")
        assert conn.state.total_requests == 2

        conn = Conn(whole(b"", status=204))
        conn.feed(POST)
        await conn.settle()
        (head,) = conn.transport.writes
        assert head.startswith(b"HTTP/1.1 204 No Content\r\n") and b"content-length" not in head

        conn = Conn(whole())
        conn.feed(b"GET / HTTP/1.0\r\n\r\n")
        await conn.settle()
        assert conn.transport.data.endswith(b"content-length: 2\r\nconnection: close\r\n\r\nok")
        assert conn.transport.closed

    run(main())


def test_a_whole_response_with_cr_lf_or_nul_in_a_header_is_refused_with_a_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        for header in [
            (b"x-relayed", b"a\r\nset-cookie: forged"),
            (b"x-relayed", b"a\nb"),
            (b"x-nul", b"a\0b"),
        ]:
            conn = Conn(whole(extra=[header]))
            with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
                conn.feed(POST)
                await conn.settle()
            (answer,) = conn.transport.writes
            assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n") and b"forged" not in answer
            assert conn.transport.closed
        assert "CR, LF or NUL" in caplog.text

    run(main())


def test_a_whole_response_to_a_server_without_the_extension_is_two_asgi_messages() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def main() -> None:
        scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
        await whole(b'{"a":1}', status=201, extra=[(b"x-extra", b"v")], limited=True)(scope, receive, send)

    run(main())
    assert sent == [
        {
            "type": "http.response.start",
            "status": 201,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"7"),
                (b"x-request-id", b"req-1"),
                (b"x-extra", b"v"),
                (b"x-ratelimit-limit-requests", b"10"),
            ],
        },
        {"type": "http.response.body", "body": b'{"a":1}'},
    ]


def test_replies_are_held_to_the_end_of_the_turn_while_two_requests_are_under_way() -> None:
    """With one request under way its reply is written at once; with two, each reply waits for
    the loop's turn to end (`write_batch.py`), then both go out, each whole and in order."""
    go = asyncio.Event()
    seen_at_send: list[list[bytes]] = []
    conns: list[Conn] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await go.wait()
        body = scope["path"].encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})
        seen_at_send.append([w for c in conns for w in c.transport.writes])

    async def main() -> None:
        first = Conn(app)
        # A second connection of the same server: its own transport, the same state and tasks.
        second = Conn.__new__(Conn)
        second.loop, second.state = first.loop, first.state
        options = {**uvicorn_options(), "lifespan": "off"}
        cfg = uvicorn.Config(app, log_config=None, **options)
        second.protocol = options["http"](cfg, first.state, {}, _loop=first.loop)
        second.transport = Transport(first.loop)
        second.transport.protocol = second.protocol
        second.protocol.connection_made(second.transport)
        conns.extend([first, second])
        first.feed(b"GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
        second.feed(b"GET /two HTTP/1.1\r\nHost: h\r\n\r\n")
        await first.settle()
        assert len(first.state.tasks) == 2
        go.set()
        await first.settle()
        assert seen_at_send == [[], []]  # both replies held when their sends returned
        assert first.transport.data.endswith(b"\r\n\r\n/one") and len(first.transport.writes) == 1
        assert second.transport.data.endswith(b"\r\n\r\n/two") and len(second.transport.writes) == 1
        # One request under way: written at once.
        first.feed(b"GET /three HTTP/1.1\r\nHost: h\r\n\r\n")
        await first.settle()
        assert any(w.endswith(b"/three") for w in seen_at_send[-1])  # written before its send returned

    run(main())


def test_pipelined_requests_are_answered_in_order() -> None:
    started: list[str] = []
    gates: dict[str, asyncio.Event] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        started.append(scope["path"])
        gate = gates.setdefault(scope["path"], asyncio.Event())
        await gate.wait()
        await sized(scope["path"].encode())(scope, receive, send)

    async def main() -> None:
        conn = Conn(app)
        conn.feed(b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
        await conn.settle()
        assert started == ["/1"] and not conn.transport.is_reading()  # the second waits its turn
        gates["/1"].set()
        await conn.settle()
        assert started == ["/1", "/2"] and conn.transport.data.endswith(b"\r\n\r\n/1")
        gates["/2"].set()
        await conn.settle()
        assert conn.transport.data.endswith(b"\r\n\r\n/2") and conn.transport.is_reading()

    run(main())


def test_100_continue_is_sent_when_the_app_reads_the_body() -> None:
    async def main() -> None:
        conn = Conn(sized())
        conn.feed(b"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        await conn.settle()
        assert conn.transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
        conn.feed(b"hi")
        await conn.settle()
        assert conn.transport.writes[1].startswith(b"HTTP/1.1 200 OK\r\n")

    run(main())


def test_a_head_request_gets_the_head_alone() -> None:
    async def main() -> None:
        conn = Conn(sized(b"twelve bytes"))
        conn.feed(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
        await conn.settle()
        (head,) = conn.transport.writes
        assert head.endswith(b"content-length: 12\r\n\r\n") and not conn.transport.closed

    run(main())


def test_a_chunked_request_body_arrives_in_pieces_and_a_stream_is_chunked() -> None:
    received: list[Message] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            received.append(message)
            if not message["more_body"]:
                break
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await send({"type": "http.response.body", "body": b"de", "more_body": False})

    async def main() -> None:
        conn = Conn(app)
        conn.feed(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await conn.settle()
        conn.feed(b"2\r\nde\r\n")
        await conn.settle()
        conn.feed(b"0\r\n\r\n")
        await conn.settle()
        assert received == [
            {"type": "http.request", "body": b"abc", "more_body": True},
            {"type": "http.request", "body": b"de", "more_body": True},
            {"type": "http.request", "body": b"", "more_body": False},
        ]
        head, first, last = conn.transport.writes
        assert head.endswith(b"content-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
        assert (first, last) == (b"3\r\nabc\r\n", b"2\r\nde\r\n0\r\n\r\n")

    run(main())


@pytest.mark.parametrize(
    "header",
    [
        (b"x-relayed", b"a\r\nset-cookie: forged"),
        (b"x-relayed", b"a\nb"),
        (b"x-nul", b"a\0b"),
        (b"x-\rname", b"v"),
    ],
)
def test_a_header_with_cr_lf_or_nul_is_refused_with_a_500(
    header: tuple[bytes, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        conn = Conn(sized(headers=[header]))
        with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
            conn.feed(POST)
            await conn.settle()
        (answer,) = conn.transport.writes
        assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert b"connection: close\r\n" in answer and answer.endswith(b"\r\n\r\nInternal Server Error")
        assert b"forged" not in answer and conn.transport.closed
        assert "CR, LF or NUL" in caplog.text

    run(main())


def test_a_client_that_leaves_mid_body_is_seen_and_later_sends_are_dropped() -> None:
    seen: list[Message] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(await receive())
        seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"late"})

    async def main() -> None:
        conn = Conn(app)
        conn.feed(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nhalf")
        await conn.settle()
        conn.transport.close()  # the client went away
        await conn.settle()
        assert seen == [
            {"type": "http.request", "body": b"half", "more_body": True},
            {"type": "http.disconnect"},
        ]
        assert conn.transport.writes == [] and not conn.state.connections and not conn.state.tasks

    run(main())


def test_reading_pauses_until_the_app_takes_the_body_and_sends_wait_for_drain() -> None:
    reads: list[int] = []
    read_all = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.sleep(0.01)
        while True:
            message = await receive()
            reads.append(len(message["body"]))
            if not message["more_body"]:
                break
        read_all.set()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
        await send({"type": "http.response.body", "body": b"x", "more_body": False})

    async def main() -> None:
        conn = Conn(app)
        conn.feed(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 70000\r\n\r\n" + b"a" * 69_999)
        assert not conn.transport.is_reading()  # over 64 KiB buffered for an app that has not read
        await asyncio.sleep(0.02)
        assert conn.transport.is_reading() and reads == [69_999]
        conn.protocol.pause_writing()
        conn.feed(b"a")
        await conn.settle()
        assert read_all.is_set() and reads == [69_999, 1]
        assert conn.transport.writes == []  # the reply waits for the transport to drain
        conn.protocol.resume_writing()
        await conn.settle()
        (reply,) = conn.transport.writes
        assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(b"\r\n\r\nx")

    run(main())


def test_a_malformed_request_gets_a_400(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        conn = Conn(sized())
        conn.feed(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n")
        await conn.settle()
        (answer,) = conn.transport.writes
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and answer.endswith(
            b"\r\n\r\nInvalid HTTP request received."
        )
        assert conn.transport.closed and "Invalid HTTP request received." in caplog.text

    run(main())


def test_an_app_that_fails_before_or_after_starting(caplog: pytest.LogCaptureFixture) -> None:
    async def before(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise ValueError("boom")

    async def after(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"9")]})
        raise ValueError("boom")

    async def main() -> None:
        conn = Conn(before)
        conn.feed(POST)
        await conn.settle()
        assert conn.transport.data.startswith(b"HTTP/1.1 500 ") and conn.transport.closed
        conn = Conn(after)
        conn.feed(POST)
        await conn.settle()
        # The held head goes out before the close: the client sees how far the reply got.
        assert conn.transport.data.endswith(b"content-length: 9\r\n\r\n") and conn.transport.closed
        assert caplog.text.count("Exception in ASGI application") == 2

    run(main())


def test_http_1_0_and_connection_close_end_the_connection() -> None:
    async def main() -> None:
        for request in (b"GET / HTTP/1.0\r\n\r\n", b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"):
            conn = Conn(sized())
            conn.feed(request)
            await conn.settle()
            assert b"\r\nconnection: close\r\n" in conn.transport.data and conn.transport.closed

    run(main())


def test_shutdown_closes_idle_connections_and_ends_busy_ones_after_their_reply() -> None:
    gate = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await gate.wait()
        await sized()(scope, receive, send)

    async def main() -> None:
        idle, busy = Conn(app), Conn(app)
        busy.feed(POST)
        await busy.settle()
        idle.protocol.shutdown()
        busy.protocol.shutdown()
        assert idle.transport.closed and not busy.transport.closed
        gate.set()
        await busy.settle()
        assert b"\r\nconnection: close\r\n" in busy.transport.data and busy.transport.closed

    run(main())


def test_an_idle_keep_alive_connection_is_closed_by_the_sweep() -> None:
    async def main() -> None:
        conn = Conn(sized(), timeout_keep_alive=5)
        conn.feed(POST)
        await conn.settle()
        guard = conn.protocol.guard
        assert conn.protocol in guard.watched  # watched, with no timer of its own
        guard._sweep()  # stamps the phase's start
        conn.protocol.since -= 6
        guard._sweep()
        assert conn.transport.closed

    run(main())


def test_over_the_concurrency_limit_the_answer_is_503() -> None:
    async def main() -> None:
        conn = Conn(sized(), limit_concurrency=1)
        conn.feed(POST)
        await conn.settle()
        assert conn.transport.data.startswith(b"HTTP/1.1 503 ")

    run(main())


def test_a_cancelled_receive_leaves_another_waiting_receive_alone() -> None:
    seen: list[Message] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()  # the whole (empty) body
        watcher = asyncio.create_task(receive())  # waits for the client to leave
        await asyncio.sleep(0)
        other = asyncio.ensure_future(receive())
        await asyncio.sleep(0)
        watcher.cancel()
        await asyncio.sleep(0)
        seen.append(await other)  # still waiting, then told the client left

    async def main() -> None:
        conn = Conn(app)
        conn.feed(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        await conn.settle()
        conn.transport.close()
        await conn.settle()
        assert seen == [{"type": "http.disconnect"}]

    run(main())
