"""The upstream HTTP/1.1 client (transport/) against servers on 127.0.0.1 whose every
byte is written here: framing, keep-alive and its retry, timeouts, flow control, uploads,
TLS. I/O tests run on both asyncio's loop and uvloop, whose transports differ."""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
import tempfile
import time
from typing import TypeVar

import pytest

from tests.support.h1_server import (
    Peer,
    Server,
    _run,
    answer,
    call,
    fetch,
    loop,
    ok,
    pool_for,
    until,
)
from unigate.edge.multipart import Form, UploadedFile, parse_form
from unigate.providers.form_body import FormBody
from unigate.transport.errors import ConnectFailed, ConnectionBroken, UpstreamTimeout
from unigate.transport.pool import Origin, Pool
from unigate.transport.response import HIGH_WATER

__all__ = ["loop"]  # the fixture, imported for the tests here
T = TypeVar("T")
# The most one data_received can add past HIGH_WATER before reading pauses (both loops read
# at most 256 KiB per call).
READ_SIZE = 256 * 1024


# -- 1. request bytes, Content-Length bodies --


def test_request_bytes_and_content_length_body(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok(b"hello world", "X-Up: y"))) as server:
            async with pool_for(
                server,
                server.url("/base/"),
                {"Authorization": "Bearer k", "Content-Type": "application/json", "X-Pool": "p"},
            ) as pool:
                resp = await call(
                    pool, "/path", b'{"a": 1}', headers={"content-type": "text/plain", "X-Req": "r"}
                )
                assert resp.status == 200 and resp.headers.get("x-up") == "y"
                assert await resp.read() == b"hello world"
            (req,) = server.requests
            assert req.line == "POST /base/path HTTP/1.1"
            # Exactly these fields: one Content-Type (the request's), no Connection or
            # Transfer-Encoding of the client's own.
            assert sorted((k.lower(), v) for k, v in req.fields) == [
                ("authorization", "Bearer k"),
                ("content-length", "8"),
                ("content-type", "text/plain"),
                ("host", f"127.0.0.1:{server.port}"),
                ("x-pool", "p"),
                ("x-req", "r"),
            ]
            assert req.body == b'{"a": 1}'

    _run(loop, main())


def test_framing_fields_are_the_clients_own(loop: str) -> None:
    """Host, Content-Length, Connection and Transfer-Encoding from callers are ignored: the
    request stays well framed, with the origin's Host."""

    async def main() -> None:
        async with Server(answer(ok())) as server:
            own = {"Host": "evil.example", "Content-Length": "1", "Connection": "close"}
            async with pool_for(server, headers={**own, "Transfer-Encoding": "chunked"}) as pool:
                resp = await call(pool, body=b"abc", headers={"host": "x", "content-length": "999", **own})
                assert await resp.read() == b"ok"
            (req,) = server.requests
            assert req.values("host") == [f"127.0.0.1:{server.port}"]
            assert req.values("content-length") == ["3"] and req.body == b"abc"
            assert req.values("connection") == [] and req.values("transfer-encoding") == []

    _run(loop, main())


# -- 2, 3. chunked and close-delimited bodies --

CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n1\r\n!\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n"
)
CHUNKED_BODY = b"hello, world!0123456789abcdef"


def test_chunked_body_cut_anywhere(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        cuts = [1, 3, 7, 11]  # odd-sized writes: cut inside the head, sizes, data and CRLFs
        while await peer.request() is not None:
            pieces, at = [], 0
            for i in range(len(CHUNKED)):
                if at >= len(CHUNKED):
                    break
                size = cuts[i % len(cuts)]
                pieces.append(CHUNKED[at : at + size])
                at += size
            await peer.send(*pieces, gap=0.001)

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                resp = await call(pool)
                assert resp.headers.get("X-A") == "1" and await resp.read() == CHUNKED_BODY
                resp = await call(pool)
                chunks = [c async for c in resp.iter_any()]
                assert b"".join(chunks) == CHUNKED_BODY
                assert len(chunks) > 1  # relayed as it came, not held until the end
            assert server.connections == 1  # the trailer ended the message cleanly

    _run(loop, main())


def test_body_delimited_by_close(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart one, ", b"part two", gap=0.01)

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                assert await fetch(pool) == b"part one, part two"
                resp = await call(pool)
                assert b"".join([c async for c in resp.iter_any()]) == b"part one, part two"
            assert server.connections == 2

    _run(loop, main())


# -- 4, 5. keep-alive and the stale-connection retry --


def test_keepalive_reuses_one_connection(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok(b"x"))) as server:
            async with pool_for(server) as pool:
                for _ in range(3):
                    assert await fetch(pool) == b"x"
            assert server.connections == 1 and len(server.requests) == 3

    _run(loop, main())


def test_connection_close_responses_are_not_reused(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok(b"x", "Connection: close"))) as server:
            async with pool_for(server) as pool:
                for _ in range(3):
                    assert await fetch(pool) == b"x"
            assert server.connections == 3

    _run(loop, main())


def test_idle_connections_age_out(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok())) as server:
            async with pool_for(server, keepalive=0.05) as pool:
                await fetch(pool)
                await asyncio.sleep(0.1)
                await fetch(pool)
            assert server.connections == 2

    _run(loop, main())


def test_server_closing_idle_connection(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(ok())  # keep-alive by the headers, then closed anyway

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                await fetch(pool)
                await asyncio.sleep(0.05)  # the close is seen: the connection leaves the pool
                await fetch(pool)
                assert len(server.requests) == 2
                await fetch(pool)  # straight after: the close is seen or the retry covers it
            assert server.connections == 3

    _run(loop, main())


def test_stale_connection_retried_once(loop: str) -> None:
    """The race: the upstream closes a keep-alive connection just as a request arrives."""

    async def handle(peer: Peer) -> None:
        while await peer.request() is not None:
            if peer.requests == 2:
                return  # read, then hung up without an answer
            await peer.send(ok())

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                await fetch(pool)
                assert await fetch(pool) == b"ok"
            assert server.connections == 2 and len(server.requests) == 3

    _run(loop, main())


def test_stale_retry_is_not_repeated(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        if len(peer.server.requests) == 1:
            await peer.send(ok())
            await peer.request()  # every later request: read and dropped

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                await fetch(pool)
                with pytest.raises(ConnectionBroken):
                    await call(pool)
            assert len(server.requests) == 3 and server.connections == 2  # 1 + the try and its retry

    _run(loop, main())


@pytest.mark.parametrize(
    ("method", "replay", "sent"), [("POST", None, 2), ("POST", False, 2), ("GET", None, 3)]
)
def test_stale_replay_only_when_safe(loop: str, method: str, replay: bool | None, sent: int) -> None:
    """A POST (a task submit, a paid generation) the upstream may have read is not sent again
    on a stale connection unless the caller says a repeat is harmless; a GET is."""

    async def handle(peer: Peer) -> None:
        while await peer.request() is not None:
            if peer.requests == 2:
                return  # read, then hung up without an answer
            await peer.send(ok())

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                await fetch(pool)
                if sent == 3:
                    assert await (await call(pool, method=method, replay=replay)).read() == b"ok"
                else:
                    with pytest.raises(ConnectionBroken):
                        await call(pool, method=method, replay=replay)
            assert len(server.requests) == sent

    _run(loop, main())


def test_fresh_connection_is_not_retried(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                with pytest.raises(ConnectionBroken):
                    await call(pool)
            assert len(server.requests) == 1 and server.connections == 1

    _run(loop, main())


# -- 6. a body cut short --


def test_connection_dropped_mid_body(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            resp = await call(pool)
            with pytest.raises(ConnectionBroken):
                await resp.read()
            resp = await call(pool)
            got = []
            with pytest.raises(ConnectionBroken):
                async for chunk in resp.iter_any():
                    got.append(chunk)
            assert b"".join(got) == b"0123456789"

    _run(loop, main())


def test_chunked_body_cut_short(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            resp = await call(pool)
            with pytest.raises(ConnectionBroken):
                await resp.read()

    _run(loop, main())


def test_malformed_response(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n")

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            with pytest.raises(ConnectionBroken, match="malformed"):
                await call(pool)

    _run(loop, main())


# -- 7, 8. timeouts, refused connections --


def test_read_timeout_after_headers(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
        assert await peer.closed_by_client(2.0)  # the timed-out connection is dropped

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            resp = await call(pool, read=0.2)
            start = time.monotonic()
            with pytest.raises(UpstreamTimeout, match="read timeout"):
                await resp.read()
            assert 0.15 < time.monotonic() - start < 0.6
            await until(lambda: server.eofs == 1)  # dropped, before aclose() would

    _run(loop, main())


def test_read_timeout_before_headers(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.closed_by_client(2.0)

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            start = time.monotonic()
            with pytest.raises(UpstreamTimeout):
                await call(pool, read=0.2)
            assert 0.15 < time.monotonic() - start < 0.6
            await until(lambda: server.eofs == 1)  # dropped, before aclose() would

    _run(loop, main())


def test_trickle_bounded_by_total_not_read(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n")
            await peer.send(*[b"x"] * 12, gap=0.03)

    async def main() -> None:
        async with Server(handle) as server, pool_for(server) as pool:
            # Every gap (30 ms) < read; 0.36 s in all > read: silence is what `read` bounds.
            resp = await call(pool, read=0.15, total=3.0)
            assert await resp.read() == b"x" * 12
            start = time.monotonic()
            resp = await call(pool, read=0.15, total=0.25)
            with pytest.raises(UpstreamTimeout, match="total"):
                await resp.read()
            assert 0.2 < time.monotonic() - start < 0.5

    _run(loop, main())


def test_connect_refused(loop: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused

        async def main() -> None:
            pool = Pool(f"http://127.0.0.1:{port}", {})
            try:
                with pytest.raises(ConnectFailed):
                    await call(pool)
            finally:
                await pool.aclose()

        _run(loop, main())


# -- 9. flow control --


def _blob(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def test_large_body_streamed_with_bounded_buffer(loop: str) -> None:
    big = _blob(8 * 1024 * 1024)

    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(f"HTTP/1.1 200 OK\r\nContent-Length: {len(big)}\r\n\r\n".encode())
        await peer.send(*[big[i : i + 65536] for i in range(0, len(big), 65536)])
        while await peer.request() is not None:
            await peer.send(ok(b"second"))

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                resp = await call(pool, read=0.5, total=5.0)
                got, largest = [], 0
                async for chunk in resp.iter_any():
                    got.append(chunk)
                    largest = max(largest, len(chunk))
                    await asyncio.sleep(0.005)  # a consumer slower than loopback
                assert b"".join(got) == big
                # Each chunk is everything buffered at that moment.
                assert HIGH_WATER // 2 < largest <= HIGH_WATER + READ_SIZE
                async with asyncio.timeout(0.5):
                    assert await fetch(pool) == b"second"
            assert server.connections == 1

    _run(loop, main())


def test_connection_released_while_paused_still_reads(loop: str) -> None:
    """A body that ends in the same read that crosses HIGH_WATER completes while reading is
    paused; the connection goes back to the pool and must not stay paused there."""
    body = _blob(HIGH_WATER + 1)

    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        while await peer.request() is not None:
            await peer.send(ok(b"second"))

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                first = await call(pool)
                await asyncio.sleep(0.05)  # all of it arrives, none of it is consumed
                assert len(pool._idle) == 1
                resp = await call(pool, read=0.3)
                assert await resp.read() == b"second"
                assert await first.read() == body
            assert server.connections == 1

    _run(loop, main())


def test_large_body_read_whole(loop: str) -> None:
    """read() keeps the whole body anyway: flow control must not stall it."""
    big = _blob(3 * 1024 * 1024)

    async def main() -> None:
        async with Server(answer(ok(big))) as server:
            async with pool_for(server) as pool:
                resp = await call(pool, read=0.3, total=2.0)
                async with asyncio.timeout(1.0):
                    assert await resp.read() == big
                    assert await fetch(pool) == big
            assert server.connections == 1

    _run(loop, main())


# -- 10, 11. interim responses, header lookup --


def test_interim_responses_skipped(loop: str) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(
                b"HTTP/1.1 100 Continue\r\n\r\n",
                b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nX-Final: no\r\n\r\n",
                b"HTTP/1.1 201 Created\r\nX-Final: yes\r\nContent-Length: 4\r\n\r\ndone",
                gap=0.005,
            )

    async def main() -> None:
        async with Server(handle) as server:
            async with pool_for(server) as pool:
                for _ in range(2):
                    resp = await call(pool)
                    assert resp.status == 201
                    assert resp.headers.get("x-final") == "yes" and "link" not in resp.headers
                    assert await resp.read() == b"done"
            assert server.connections == 1

    _run(loop, main())


def test_repeated_headers_joined_and_case_insensitive(loop: str) -> None:
    async def main() -> None:
        async with Server(answer(ok(b"", "X-Multi: a", "x-multi: b", "X-MULTI: c", "ETag: e"))) as server:
            async with pool_for(server) as pool:
                resp = await call(pool)
                await resp.read()
            assert resp.headers.get("x-Multi") == "a, b, c" and resp.headers["X-MULTI"] == "a, b, c"
            assert resp.headers.get("etag") == "e" and "ETAG" in resp.headers
            assert resp.headers.get("missing") is None and resp.headers.get("missing", "d") == "d"

    _run(loop, main())


# -- 12, 13. cancellation and release --


def test_cancelled_request_drops_its_connection(loop: str) -> None:
    async def main() -> None:
        arrived = asyncio.Event()

        async def handle(peer: Peer) -> None:
            if peer.index == 1:
                await peer.request()
                arrived.set()
                assert await peer.closed_by_client()
                return
            await answer(ok())(peer)

        async with Server(handle) as server:
            async with pool_for(server) as pool:
                task = asyncio.create_task(call(pool))
                await arrived.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                await until(lambda: server.eofs == 1)  # dropped at once, not left open
                assert await fetch(pool) == b"ok"
            assert server.connections == 2

    _run(loop, main())


def test_release_before_end_closes_after_end_keeps(loop: str) -> None:
    async def main() -> None:
        async def handle(peer: Peer) -> None:
            if peer.index == 1:
                await peer.request()
                await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789")
                assert await peer.closed_by_client()
                return
            await answer(ok())(peer)

        async with Server(handle) as server:
            async with pool_for(server) as pool:
                resp = await call(pool)
                resp.release()  # 99990 bytes unread: the connection is out of step
                await until(lambda: server.eofs == 1)
                with pytest.raises(ConnectionBroken):
                    await resp.read()
                for _ in range(2):
                    resp = await call(pool)
                    assert await resp.read() == b"ok"
                    resp.release()  # after the end: nothing to drop
                resp = await call(pool)
                resp.close()  # the alias, on a body that already arrived whole
            assert server.connections == 2

    _run(loop, main())


# -- 14. streamed uploads --


def _upload(size: int) -> UploadedFile:
    spool = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - the caller closes it
    spool.write(_blob(size))
    return UploadedFile("file", 'a b".wav', "audio/wav", spool, size)


def test_form_body_upload_round_trips(loop: str) -> None:
    upload = _upload(3_000_000)
    form = Form(parts=[("model", "whisper-1"), ("file", upload), ("tags[]", "a"), ("tags[]", "b")])

    async def main() -> None:
        async with Server(answer(ok())) as server:
            async with pool_for(server, headers={"Content-Type": "application/json"}) as pool:
                body = FormBody(form, {"model": "gpt-4o-transcribe", "language": "fr"})
                resp = await call(pool, body=body, headers={"Content-Type": body.content_type})
                assert await resp.read() == b"ok"
            (req,) = server.requests
            assert req.values("content-length") == [str(body.length)] and len(req.body) == body.length
            assert req.values("content-type") == [body.content_type]
            got = parse_form(req.body, body.content_type.encode())
            try:
                assert got.fields == {"model": ["gpt-4o-transcribe"], "tags": ["a", "b"], "language": ["fr"]}
                (sent,) = got.files["file"]
                # Quotes in names are percent-encoded, as browsers do (WHATWG).
                assert (sent.filename, sent.content_type, sent.size) == (
                    "a b%22.wav",
                    "audio/wav",
                    upload.size,
                )
                assert sent.read() == upload.read()
            finally:
                got.close()

    try:
        _run(loop, main())
    finally:
        upload.file.close()


@pytest.mark.parametrize("read_it", [True, False], ids=["read", "unread"])
def test_streamed_body_resent_whole_on_retry(loop: str, read_it: bool) -> None:
    """A stale connection, closed by the upstream after the request was read or (with an
    upload bigger than the socket buffers, so the writer is blocked) after only its head."""
    upload = _upload(6 * 1024 * 1024)
    form = Form(parts=[("file", upload)])

    async def handle(peer: Peer) -> None:
        while await peer.request(body=read_it or peer.requests == 0) is not None:
            if peer.requests == 2:
                return
            await peer.send(ok())

    async def main() -> None:
        async with Server(handle, rcvbuf=16384) as server:
            async with pool_for(server) as pool:
                await fetch(pool)
                body = FormBody(form)
                resp = await call(pool, body=body, headers={"Content-Type": body.content_type})
                assert await resp.read() == b"ok"
            assert [len(r.body) for r in server.requests] == [0, body.length if read_it else 0, body.length]
            received = parse_form(server.requests[2].body, body.content_type.encode())
            try:
                assert received.file("file") is not None
            finally:
                received.close()
            assert server.connections == 2

    try:
        _run(loop, main())
    finally:
        upload.file.close()


def test_early_413_during_upload(loop: str) -> None:
    """The upstream answers after the head and stops reading: the answer reaches the caller,
    the rest of the upload is dropped with the connection."""
    upload = _upload(12 * 1024 * 1024)  # more than the socket buffers hold: writing blocks

    async def main() -> None:
        answered = asyncio.Event()

        async def handle(peer: Peer) -> None:
            if peer.index == 1:
                await peer.request(body=False)
                await peer.send(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large")
                await answered.wait()
                assert await peer.closed_by_client()
                return
            await answer(ok())(peer)

        async with Server(handle, rcvbuf=16384) as server:
            async with pool_for(server) as pool:
                body = FormBody(Form(parts=[("file", upload)]))
                async with asyncio.timeout(2.0):
                    resp = await call(pool, body=body, headers={"Content-Type": body.content_type})
                    assert resp.status == 413 and await resp.read() == b"too large"
                answered.set()
                await until(lambda: server.eofs == 1)
                assert await fetch(pool) == b"ok"
            assert server.connections == 2

    try:
        _run(loop, main())
    finally:
        upload.file.close()


def test_upload_to_a_stalled_upstream_times_out(loop: str) -> None:
    upload = _upload(12 * 1024 * 1024)

    async def handle(peer: Peer) -> None:
        await peer.request(body=False)
        await asyncio.sleep(2.0)  # neither reads nor answers

    async def main() -> None:
        async with Server(handle, rcvbuf=16384) as server, pool_for(server) as pool:
            body = FormBody(Form(parts=[("file", upload)]))
            start = time.monotonic()
            with pytest.raises(UpstreamTimeout):
                await call(pool, body=body, read=0.2)
            assert time.monotonic() - start < 0.6

    try:
        _run(loop, main())
    finally:
        upload.file.close()


def test_slow_upload_that_keeps_moving_is_not_a_read_timeout(loop: str) -> None:
    # An upload to a slow upstream takes longer than `read`, but it keeps draining: the
    # read timeout is for upstream silence, and an upload in progress is not silence. Big
    # enough that the kernel's socket buffers (a few MB) cannot hide the upload's progress.
    upload = _upload(32 * 1024 * 1024)

    async def handle(peer: Peer) -> None:
        head = await peer.reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        size = int(next(x for x in lines if x.lower().startswith("content-length:"))[15:])
        got = 0
        # 4 MiB every 250 ms: ~2 s in all, each pause well under `read` (a quarter of it, so a
        # loaded machine's scheduling delays do not make a pause look like silence).
        while got < size:
            got += len(await peer.reader.readexactly(min(4 * 1024 * 1024, size - got)))
            await asyncio.sleep(0.25)
        await peer.send(ok(str(got).encode()))

    async def main() -> None:
        async with Server(handle, rcvbuf=16384) as server, pool_for(server) as pool:
            body = FormBody(Form(parts=[("file", upload)]))
            start = time.monotonic()
            resp = await call(pool, body=body, read=1.0)
            assert time.monotonic() - start > 1.5  # the upload outlasted `read`
            assert resp.status == 200 and int(await resp.read()) == body.length

    try:
        _run(loop, main())
    finally:
        upload.file.close()


# -- 15. TLS --


def test_tls_verifies_the_server_name(loop: str) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    sni: list[str | None] = []

    def server_context(name: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(name).configure_cert(ctx)
        ctx.sni_callback = lambda _obj, server_name, _ctx: sni.append(server_name)
        return ctx

    async def main() -> None:
        async with (
            Server(answer(ok(b"secure")), tls=server_context("localhost")) as good,
            Server(answer(ok()), tls=server_context("other.example")) as wrong,
        ):
            async with pool_for(good, good.url(host="localhost")) as pool:
                with pytest.raises(ConnectFailed):
                    await call(pool)  # the system store does not know this CA
                assert pool.dialer.tls is not None and pool.dialer.tls.check_hostname
                client = ssl.create_default_context()
                ca.configure_trust(client)
                pool.dialer.tls = client
                assert await fetch(pool) == b"secure"
                assert sni[-1] == "localhost"
            async with pool_for(wrong, wrong.url(host="localhost")) as pool:
                pool.dialer.tls = client
                with pytest.raises(ConnectFailed):
                    await call(pool)  # trusted CA, certificate for another name
            assert wrong.requests == []

    _run(loop, main())


# -- 16. origins and header validation --


def test_origin_parsing() -> None:
    v6 = Origin.parse("http://[::1]:8080/v1/")
    assert (v6.host, v6.port, v6.base_path, v6.host_header) == ("::1", 8080, "/v1", "[::1]:8080")
    assert Origin.parse("http://example.com:80").host_header == "example.com"
    assert Origin.parse("https://example.com:443/").host_header == "example.com"
    assert Origin.parse("https://example.com").port == 443
    assert Origin.parse("http://example.com:443").host_header == "example.com:443"
    assert Origin.parse("https://[2001:db8::1]").host_header == "[2001:db8::1]"
    azure = Origin.parse("https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01")
    assert (
        azure.target("/chat/completions") == "/openai/deployments/d/chat/completions?api-version=2024-06-01"
    )
    assert azure.target("/files?limit=2") == "/openai/deployments/d/files?limit=2&api-version=2024-06-01"
    for bad in [
        "ftp://example.com",
        "example.com",
        "http://",
        "http://example.com/#top",
        "http://user:pw@example.com",
        "http://example.com:99999",
        "http://example.com:port",
    ]:
        with pytest.raises(ValueError):
            Origin.parse(bad)


def test_header_injection_rejected() -> None:
    for headers in [{"X-A": "1\r\nX-Evil: 1"}, {"X-A": "1\nx"}, {"X A": "1"}, {"X-A:": "1"}, {"": "1"}]:
        with pytest.raises(ValueError):
            Pool("http://127.0.0.1:1", headers)

    async def main() -> None:
        pool = Pool("http://127.0.0.1:1", {})
        try:
            with pytest.raises(ValueError):
                await call(pool, headers={"X-A": "a\rb"})
            assert pool._open == set()  # rejected before any connection
        finally:
            await pool.aclose()

    asyncio.run(main())


def test_ipv6_literal_host_header(loop: str) -> None:
    try:
        socket.socket(socket.AF_INET6).close()
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")

    async def main() -> None:
        async with Server(answer(ok(b"v6")), host="::1") as server:
            async with pool_for(server, f"http://[::1]:{server.port}/") as pool:
                assert await fetch(pool, "/x") == b"v6"
            (req,) = server.requests
            assert req.line == "POST /x HTTP/1.1" and req.values("host") == [f"[::1]:{server.port}"]

    _run(loop, main())


# -- content encoding: asked for identity; a compressed body sent anyway is decoded --


@pytest.mark.parametrize("wrap", ["gzip", "deflate"])
def test_compressed_body_is_decoded(loop: str, wrap: str) -> None:
    import gzip
    import zlib

    payload = b'{"answer": "' + b"x" * 50_000 + b'"}'
    packed = gzip.compress(payload) if wrap == "gzip" else zlib.compress(payload)

    async def main() -> None:
        async with (
            Server(answer(ok(packed, f"Content-Encoding: {wrap}"))) as server,
            pool_for(server) as pool,
        ):
            assert await fetch(pool) == payload
            resp = await call(pool)  # streamed, in pieces: the same bytes
            got = b"".join([chunk async for chunk in resp.iter_any()])
            assert got == payload

    _run(loop, main())


@pytest.mark.parametrize(
    ("body", "encoding", "error"),
    [
        (b"\x1f\x8b\x08\x00garbage-not-gzip", "gzip", "corrupt"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip", "truncated"),
        (b"\x0b\x02\x80hello\x03", "br", "br-encoded body, which is not decoded"),
    ],
    ids=["corrupt", "truncated", "brotli"],
)
def test_undecodable_bodies_fail_clearly(loop: str, body: bytes, encoding: str, error: str) -> None:
    async def main() -> None:
        async with (
            Server(answer(ok(body, f"Content-Encoding: {encoding}"))) as server,
            pool_for(server) as pool,
        ):
            resp = await call(pool)
            assert resp.status == 200
            with pytest.raises(ConnectionBroken, match=error):
                await resp.read()

    _run(loop, main())


def test_empty_body_with_an_encoding_is_fine(loop: str) -> None:
    async def main() -> None:
        response = b"HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n"
        async with Server(answer(response)) as server, pool_for(server) as pool:
            resp = await call(pool)
            assert resp.status == 204 and await resp.read() == b""

    _run(loop, main())


def test_a_redirect_is_an_upstream_failure_unless_followed(loop: str) -> None:
    from unigate.providers.base import RouteFailed, Timeouts
    from unigate.providers.http import UpstreamHTTP

    moved = b"HTTP/1.1 302 Found\r\nLocation: https://elsewhere.example/v1\r\nContent-Length: 5\r\n\r\nmoved"
    timeouts = Timeouts(connect=1.0, read=1.0, total=5.0)

    async def main() -> None:
        async with Server(answer(moved)) as server:
            http = UpstreamHTTP(server.url(), {})
            try:
                with pytest.raises(RouteFailed, match="HTTP 302 at /chat, a redirect"):
                    await http.post("/chat", b"{}", timeouts)
                with pytest.raises(RouteFailed, match="HTTP 302"):
                    await http.get("/file", timeouts)
                followed = await http.get("/file", timeouts, redirects=True)  # downloads follow
                assert (
                    followed.status == 302 and followed.headers["location"] == "https://elsewhere.example/v1"
                )
                followed.release()
            finally:
                await http.aclose()

    _run(loop, main())
