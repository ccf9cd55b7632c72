"""The limits a public endpoint needs, enforced by the HTTP/1.1 protocol (`h1_protocol.py`).

- **Request head size.** httptools grows the URL and each header value by concatenation, so a
  50 MB header stalled a worker for seconds. Head bytes are counted before they reach the
  parser; past MAX_HEAD_BYTES the client gets 431 and the connection closes.
- **Head timeout.** A head must complete within `UNIGATE_HEADER_TIMEOUT` seconds of the
  connection (or of its first byte, on a kept-alive one): a connection that sends nothing, or
  trickles a head, is not held forever.
- **Body timeout.** A request whose body stops arriving (a declared Content-Length never met)
  is dropped after `UNIGATE_BODY_TIMEOUT` seconds of silence; the app sees the client leave.
- **Keep-alive.** A kept-alive connection with no request for the server's `timeout_keep_alive`
  seconds is closed.
- **Connection cap.** At `UNIGATE_MAX_CONNECTIONS` open connections per process, the oldest
  connection that is only waiting (an unfinished head, else an idle keep-alive) is closed to
  admit the new one, so floods of idle connections cannot lock out real clients or `/healthz`.

Timers per request would cost more than the rest of the gateway's work (a libuv timer each
under uvloop); instead each connection notes its phase, and one sweep a second per process
stamps the time a phase was first seen and closes what has overstayed: no clock read and no
timer on the per-request path. Timeouts are therefore exact to about two seconds.

Used by `unigate serve` with uvicorn (the default server); granian applies its own limits.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Protocol

from unigate.settings import env_default

MAX_HEAD_BYTES = 64 * 1024
SWEEP_EVERY = 1.0  # seconds
DEFAULTS = {
    name: float(env_default(name))
    for name in ("UNIGATE_HEADER_TIMEOUT", "UNIGATE_BODY_TIMEOUT", "UNIGATE_MAX_CONNECTIONS")
}
# Phases of a connection. IDLE: kept alive, no byte of the next request yet; HEAD: a head is
# arriving; BODY: a body is arriving; BUSY: the app has the whole request (not watched).
IDLE, HEAD, BODY, BUSY = range(4)


class Watched(Protocol):
    """What the guard sees of a connection."""

    phase: int
    since: float  # loop time the phase began (BODY: the last body byte); -1: not yet seen
    head_bytes: int

    def drop(self) -> None: ...
    def refuse(self, status: bytes) -> None: ...
    def body_waits_for_app(self) -> bool: ...


class Guard:
    """The limits and the watched connections of one server process."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, keep_alive: float, env: dict[str, str] | None = None
    ) -> None:
        env = dict(os.environ) if env is None else env
        values = {name: float(env.get(name) or default) for name, default in DEFAULTS.items()}
        self.header_timeout = values["UNIGATE_HEADER_TIMEOUT"]
        self.body_timeout = values["UNIGATE_BODY_TIMEOUT"]
        self.max_connections = int(values["UNIGATE_MAX_CONNECTIONS"])
        self.keep_alive = keep_alive
        self.loop = loop
        # Connections waiting for (part of) a request: IDLE, HEAD or BODY, oldest first.
        self.watched: dict[Watched, None] = {}
        self._sweeping = False

    def watch(self, conn: Watched) -> None:
        self.watched[conn] = None
        if not self._sweeping:
            self._sweeping = True
            self.loop.call_later(SWEEP_EVERY, self._sweep)

    def evict_one(self, connections: Iterable[object]) -> bool:
        """Close a connection that is only waiting, the oldest unfinished head first, else an
        idle one; False when every connection is serving a request. Only run at the cap."""
        for wanted in (HEAD, IDLE):
            for conn in self.watched:
                if conn.phase == wanted:
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
                continue
            waited = now - conn.since
            phase = conn.phase
            if phase == HEAD and waited > self.header_timeout:
                if conn.head_bytes:
                    conn.refuse(b"408 Request Timeout")
                else:
                    conn.drop()  # connected and silent: nothing to answer
            elif phase == BODY and waited > self.body_timeout:
                if conn.body_waits_for_app():
                    conn.since = -1.0  # reading is paused for the app, not the client
                else:
                    conn.drop()  # the app's receive() reports the client as gone
            elif phase == IDLE and waited > self.keep_alive:
                conn.drop()
        if self.watched:
            self._sweeping = True
            self.loop.call_later(SWEEP_EVERY, self._sweep)
