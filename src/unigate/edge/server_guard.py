"""uvicorn's httptools protocol with the limits a public endpoint needs, which uvicorn lacks.

- **Request head size.** httptools grows the URL and each header value by concatenation, so a
  50 MB header stalled a worker for seconds. Head bytes are counted before they reach the
  parser; past MAX_HEAD_BYTES the client gets 431 and the connection closes.
- **Head timeout.** uvicorn starts its keep-alive timer only after a response: a connection that
  sends nothing, or trickles a head, was held forever. A head must now complete within
  `UNIGATE_HEADER_TIMEOUT` seconds of the connection (or of its first byte, on a kept-alive one).
- **Body timeout.** A request whose body stops arriving (a declared Content-Length never met)
  is dropped after `UNIGATE_BODY_TIMEOUT` seconds of silence; the app sees the client leave.
- **Connection cap.** At `UNIGATE_MAX_CONNECTIONS` open connections per process, the oldest
  connection that is only waiting (idle keep-alive or an unfinished head) is closed to admit
  the new one, so floods of idle connections cannot lock out real clients or `/healthz`.

Timers per request would cost more than the rest of the gateway's work (a libuv timer each
under uvloop); instead each connection notes its phase, and one sweep a second per process
stamps the time a phase was first seen and closes what has overstayed: no clock read and no
timer on the per-request path. Timeouts are therefore exact to about two seconds.

Each request's response goes out in one write when it can (`one_write.py`).

Used by `unigate serve` with uvicorn (the default server); granian applies its own limits.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from unigate.edge.one_write import HeadWithBody
from unigate.settings import env_default

MAX_HEAD_BYTES = 64 * 1024
SWEEP_EVERY = 1.0  # seconds
DEFAULTS = {
    name: float(env_default(name))
    for name in ("UNIGATE_HEADER_TIMEOUT", "UNIGATE_BODY_TIMEOUT", "UNIGATE_MAX_CONNECTIONS")
}
_HEAD_END = b"\r\n\r\n"
# Phases of a connection. IDLE: kept alive, no byte of the next request yet (uvicorn's own
# keep-alive timer closes it); HEAD: a head is arriving; BODY: a body is arriving; BUSY: the
# app has the whole request.
IDLE, HEAD, BODY, BUSY = range(4)


class Guard:
    """The limits and the watched connections of one server process."""

    def __init__(self, loop: asyncio.AbstractEventLoop, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ) if env is None else env
        values = {name: float(env.get(name) or default) for name, default in DEFAULTS.items()}
        self.header_timeout = values["UNIGATE_HEADER_TIMEOUT"]
        self.body_timeout = values["UNIGATE_BODY_TIMEOUT"]
        self.max_connections = int(values["UNIGATE_MAX_CONNECTIONS"])
        self.loop = loop
        # Connections with a request arriving (HEAD or BODY), oldest first.
        self.watched: dict[GuardedHttpToolsProtocol, None] = {}
        self._sweeping = False

    def watch(self, conn: GuardedHttpToolsProtocol) -> None:
        self.watched[conn] = None
        if not self._sweeping:
            self._sweeping = True
            self.loop.call_later(SWEEP_EVERY, self._sweep)

    def evict_one(self, connections: set[Any]) -> bool:
        """Close a connection that is only waiting (idle, or its head unfinished), the oldest
        unfinished head first; False when every connection is serving a request."""
        for conn in self.watched:
            if conn.phase == HEAD:
                conn.drop()
                return True
        for conn in connections:  # only at the cap: a scan is fine there
            if isinstance(conn, GuardedHttpToolsProtocol) and conn.phase == IDLE:
                conn.drop()
                return True
        return False

    def _sweep(self) -> None:
        """Stamp what entered a phase since the last sweep, time out what has overstayed.
        (Stamping here keeps clock reads off the per-request path.)"""
        self._sweeping = False
        now = self.loop.time()
        for conn in list(self.watched):
            if conn.since < 0:
                conn.since = now
            elif conn.phase == HEAD and now - conn.since > self.header_timeout:
                conn.head_timed_out()
            elif conn.phase == BODY and now - conn.since > self.body_timeout:
                conn.body_timed_out()
        if self.watched:
            self._sweeping = True
            self.loop.call_later(SWEEP_EVERY, self._sweep)


def _guard(state: ServerState, loop: asyncio.AbstractEventLoop) -> Guard:
    """Per server: kept on its shared state, the one object all its connections see."""
    guard = getattr(state, "unigate_guard", None)
    if guard is None:
        guard = Guard(loop)
        state.unigate_guard = guard  # type: ignore[attr-defined]
    return guard


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.guard = _guard(server_state, self.loop)
        self.phase = HEAD
        self.since = -1.0  # loop time the phase began (BODY: the last body byte); -1: not yet seen
        self.head_bytes = 0
        self.head_tail = b""  # the last 3 head bytes: a head's end may span two reads
        self.refused = False

    # -- connection lifetime --

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        guard = self.guard
        if len(self.connections) >= guard.max_connections and not guard.evict_one(self.connections):
            self.refused = True
            transport.close()  # every connection is serving a request: refuse this one
            return
        super().connection_made(transport)
        self._enter(HEAD)  # a new connection owes its first head within the header timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.watched.pop(self, None)
        if self.refused:  # closed in connection_made: uvicorn never saw it
            return
        super().connection_lost(exc)

    def drop(self) -> None:
        self.guard.watched.pop(self, None)
        self.phase = BUSY
        if not self.transport.is_closing():
            self.transport.close()

    # -- bytes in --

    def data_received(self, data: bytes) -> None:
        phase = self.phase
        if phase == IDLE:
            self._enter(HEAD)  # first byte of the next request on a kept-alive connection
            phase = HEAD
        if phase == HEAD:
            if not self._head_fits(data):
                self._refuse(b"431 Request Header Fields Too Large")
                return
        elif phase == BODY:
            self.since = -1.0  # bytes came: the silence restarts (stamped by the next sweep)
        super().data_received(data)

    def _head_fits(self, data: bytes) -> bool:
        room = MAX_HEAD_BYTES - self.head_bytes
        if len(data) <= room:
            self.head_bytes += len(data)
            self.head_tail = data[-3:] if len(data) >= 3 else (self.head_tail + data)[-3:]
            return True
        # Over budget unless the head ends within it (what follows is body or the next request).
        end = (self.head_tail + data).find(_HEAD_END)
        return end != -1 and end + len(_HEAD_END) - len(self.head_tail) <= room

    # -- parser callbacks --

    def on_headers_complete(self) -> None:
        self.head_bytes = 0
        self.head_tail = b""
        self.phase = BODY  # still watched, now for the body's silences
        self.since = -1.0
        existing = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        # A HEAD request's head has no body write to ride on; an upgrade made no new cycle.
        if cycle is not None and cycle is not existing and self.scope["method"] != "HEAD":
            cycle.transport = HeadWithBody(self.transport)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self.phase = BUSY
        self.guard.watched.pop(self, None)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.phase == BUSY:
            self.phase = IDLE  # uvicorn's keep-alive timer bounds the wait for the next request

    # -- called by the sweep --

    def head_timed_out(self) -> None:
        if self.head_bytes:
            self._refuse(b"408 Request Timeout")
        else:
            self.drop()  # connected and silent: nothing to answer

    def body_timed_out(self) -> None:
        if self.flow.read_paused:
            # Reading is paused because the app has not consumed the body yet: not the client.
            self.since = -1.0
            return
        self.drop()  # the app's receive() reports the client as gone

    # -- internals --

    def _enter(self, phase: int) -> None:
        self.phase = phase
        self.since = -1.0
        self.head_bytes = 0
        self.head_tail = b""
        self.guard.watch(self)

    def _refuse(self, status: bytes) -> None:
        self.guard.watched.pop(self, None)
        self.phase = BUSY
        if not self.transport.is_closing():
            self.transport.write(
                b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            self.transport.close()
