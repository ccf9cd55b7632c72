"""The HTTP/1.1 server protocol `unigate serve` runs under uvicorn's `Server` (in place of
uvicorn's `HttpToolsProtocol`; the server loop, workers, lifespan, signals and graceful shutdown
stay uvicorn's).

Built for this app, because uvicorn's protocol and its request cycle were about a quarter of a
worker's CPU: one `Cycle` (`h1_cycle.py`) per request holds its receive/send; the scope carries
only the keys ASGI requires (no proxy-header rewriting: the app never reads `client`); a
response head is joined from preformatted bytes (`h1_head.py`) and checked once, not per header
by regex; a sized response leaves in one write; and the guard's limits (`server_guard.py`)
replace uvicorn's per-request keep-alive timer with a phase the one sweep a second reads.

Supported as uvicorn's protocol does: keep-alive (`timeout_keep_alive`), pipelined requests
(answered in order), `Expect: 100-continue`, HEAD, chunked bodies both ways, HTTP/1.0, flow
control both ways, `limit_concurrency` (503) and `limit_max_requests` (through
`total_requests`). An Upgrade request is served as plain HTTP (the gateway has no WebSocket).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, Final
from urllib.parse import unquote

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.utils import get_local_addr, get_remote_addr, is_ssl
from uvicorn.server import ServerState

from unigate.edge.h1_cycle import Cycle, wait_shared
from unigate.edge.h1_head import EXTENSIONS, ServerLines
from unigate.edge.server_guard import BODY, BUSY, HEAD, IDLE, MAX_HEAD_BYTES, Guard
from unigate.write_batch import WriteBatch

logger: Final = logging.getLogger("uvicorn.error")
_HEAD_END: Final = b"\r\n\r\n"
BAD_REQUEST: Final = b"Invalid HTTP request received."
# A request's task is built with this name: one the loop would give it ("Task-<n>") is formatted
# for every request, and uvloop's `create_task` names it that way before renaming it.
TASK_NAME: Final = "unigate-request"


class Shared:
    """What every connection of one server shares: built by its first connection and kept
    on uvicorn's `ServerState`."""

    def __init__(self, config: Config, state: ServerState, loop: asyncio.AbstractEventLoop) -> None:
        if not config.loaded:
            config.load()
        self.app = config.loaded_app
        self.state = state
        self.loop = loop
        self.root_path = config.root_path
        self.raw_root = config.root_path.encode("ascii")
        self.asgi = {"version": config.asgi_version, "spec_version": "2.3"}
        self.limit_concurrency = config.limit_concurrency
        self.guard = Guard(loop, float(config.timeout_keep_alive))
        self.server_lines = ServerLines()
        # Replies are written at the end of the loop's turn while two or more are under way.
        self.writes = WriteBatch.of(loop)
        self.writes.in_flight = state.tasks

    @staticmethod
    def of(config: Config, state: ServerState, loop: asyncio.AbstractEventLoop | None) -> Shared:
        shared: Shared | None = getattr(state, "unigate_h1", None)
        if shared is None:
            shared = Shared(config, state, loop or asyncio.get_event_loop())
            state.unigate_h1 = shared  # type: ignore[attr-defined]
        return shared


class H1Protocol(asyncio.Protocol):
    """One client connection."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        shared = Shared.of(config, server_state, _loop)
        self.shared = shared
        self.loop = shared.loop
        self.guard = shared.guard
        self.writes = shared.writes
        self.app_state = app_state
        self.connections = server_state.connections
        self.tasks = server_state.tasks
        self.parser = httptools.HttpRequestParser(self)
        # Answer the first of pipelined requests even when it asked to close the connection.
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.client: tuple[str, int] | None = None
        self.server: tuple[str, int | None] | None = None
        self.scheme = "http"
        self.refused = False
        # Requests: the one being parsed (`cycle`), the one the app is answering (`active`),
        # and the parsed ones waiting their turn.
        self.cycle: Cycle | None = None
        self.active: Cycle | None = None
        self.pipeline: deque[tuple[Cycle, Any]] = deque()
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.expect_continue = False
        # The guard's view (server_guard.py).
        self.phase = HEAD
        self.since = -1.0
        self.head_bytes = 0
        self.head_tail = b""  # the last 3 head bytes: a head's end may span two reads
        # Flow control.
        self.reading_paused = False
        self.writing_paused = False
        self.drained: asyncio.Future[None] | None = None

    # -- connection lifetime --

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        guard = self.guard
        if len(self.connections) >= guard.max_connections and not guard.evict_one(self.connections):
            self.refused = True
            transport.close()  # every connection is serving a request: refuse this one
            return
        self.connections.add(self)  # type: ignore[arg-type]
        self.transport = transport
        self.server = get_local_addr(transport)
        self.client = get_remote_addr(transport)
        self.scheme = "https" if is_ssl(transport) else "http"
        self.enter(HEAD)  # a new connection owes its first head within the header timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.watched.pop(self, None)
        if self.refused:
            return
        self.connections.discard(self)
        for cycle in (self.active, self.cycle):
            if cycle is not None:
                if not cycle.complete:
                    cycle.disconnected = True
                cycle.wake()
        self.resume_writing()
        if exc is None:
            self.transport.close()

    def eof_received(self) -> None:
        pass  # the transport closes; connection_lost follows

    def shutdown(self) -> None:
        """Graceful shutdown (uvicorn's server): close when idle, else after this response."""
        cycle = self.active
        if cycle is None or cycle.complete:
            self.writes.close(self.transport)
        else:
            cycle.keep_alive = False

    # -- bytes in --

    def data_received(self, data: bytes) -> None:
        phase = self.phase
        if phase == IDLE:
            self.phase = phase = HEAD  # first byte of the next request on a kept-alive connection
            self.since = -1.0
        if phase == HEAD:
            if not self.head_fits(data):
                self.refuse(b"431 Request Header Fields Too Large")
                return
        elif phase == BODY:
            self.since = -1.0  # bytes came: the silence restarts (stamped by the next sweep)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            logger.warning("Unsupported upgrade request.")
        except httptools.HttpParserError:
            logger.warning(BAD_REQUEST.decode())
            self.bad_request()

    def head_fits(self, data: bytes) -> bool:
        room = MAX_HEAD_BYTES - self.head_bytes
        if len(data) <= room:
            self.head_bytes += len(data)
            self.head_tail = data[-3:] if len(data) >= 3 else (self.head_tail + data)[-3:]
            return True
        # Over budget unless the head ends within it (what follows is body or the next request).
        end = (self.head_tail + data).find(_HEAD_END)
        return end != -1 and end + len(_HEAD_END) - len(self.head_tail) <= room

    # -- parser callbacks --

    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = []
        self.expect_continue = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_bytes = 0
        self.head_tail = b""
        self.phase = BODY  # still watched, now for the body's silences
        self.since = -1.0
        shared = self.shared
        parser = self.parser
        url = self.url
        # `find`, not `in`: on Python 3.11 `bytes in bytes` first tries the needle as an int and
        # builds (then drops) a TypeError with its message, every request.
        if url[:1] == b"/" and url.find(b"#") < 0:
            raw_path, _, query = url.partition(b"?")
        else:  # absolute form, or a fragment: httptools' own URL parser
            parsed = httptools.parse_url(url)
            raw_path, query = parsed.path, parsed.query or b""
        path = raw_path.decode("ascii")
        if "%" in path:
            path = unquote(path)
        version = parser.get_http_version()
        scope = {
            "type": "http",
            "asgi": shared.asgi,
            "http_version": version,
            "method": parser.get_method().decode("ascii"),
            "scheme": self.scheme,
            "path": shared.root_path + path if shared.root_path else path,
            "raw_path": shared.raw_root + raw_path if shared.root_path else raw_path,
            "query_string": query,
            "root_path": shared.root_path,
            "headers": self.headers,
            "client": self.client,
            "server": self.server,
            "state": self.app_state.copy(),
            "extensions": EXTENSIONS,  # shared, never written: the one this server adds (h1_head.py)
        }
        cycle = Cycle(self, scope, version != "1.0" and parser.should_keep_alive(), self.expect_continue)
        app = shared.app
        limit = shared.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            logger.warning("Exceeded concurrency limit.")
        previous = self.cycle
        self.cycle = cycle
        if previous is None or previous.complete:
            self.run(cycle, app)
        else:  # pipelined: answered once the responses before it are done
            self.pause_reading()
            self.pipeline.append((cycle, app))

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.complete:
            cycle.add_body(body)

    def on_message_complete(self) -> None:
        self.phase = BUSY
        self.guard.watched.pop(self, None)
        cycle = self.cycle
        if cycle is not None and not cycle.complete:
            cycle.received_all = True
            cycle.wake()

    # -- the app --

    def run(self, cycle: Cycle, app: Any) -> None:
        self.active = cycle
        task = asyncio.Task(cycle.run(app), loop=self.loop, name=TASK_NAME)
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def response_done(self, cycle: Cycle) -> None:
        """A response is complete: start the next pipelined request, or wait for one."""
        self.shared.state.total_requests += 1
        if self.transport.is_closing():
            return
        self.resume_reading()
        if self.pipeline:
            self.run(*self.pipeline.popleft())
        elif self.phase == BUSY:
            self.enter(IDLE)  # the keep-alive timeout runs from here

    # -- flow control --

    def pause_reading(self) -> None:
        if not self.reading_paused and not self.transport.is_closing():
            self.reading_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.reading_paused:
            self.reading_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def drain(self) -> None:
        drained = self.drained
        if drained is None or drained.done():
            drained = self.drained = self.loop.create_future()
        await wait_shared(drained)

    # -- the guard's (server_guard.py) --

    def enter(self, phase: int) -> None:
        self.phase = phase
        self.since = -1.0
        self.head_bytes = 0
        self.head_tail = b""
        self.guard.watch(self)

    def body_waits_for_app(self) -> bool:
        return self.reading_paused

    def drop(self) -> None:
        self.guard.watched.pop(self, None)
        self.phase = BUSY
        if not self.transport.is_closing():
            self.writes.close(self.transport)

    def refuse(self, status: bytes) -> None:
        self.guard.watched.pop(self, None)
        self.phase = BUSY
        if not self.transport.is_closing():
            self.writes.now(
                self.transport, b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            self.transport.close()

    def bad_request(self) -> None:
        self.guard.watched.pop(self, None)
        self.phase = BUSY
        shared = self.shared
        shared.server_lines.refresh(shared.state.default_headers)
        self.writes.now(
            self.transport,
            b"HTTP/1.1 400 Bad Request\r\n%scontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (shared.server_lines.lines, len(BAD_REQUEST), BAD_REQUEST),
        )
        self.transport.close()
