"""unigate's own per-request cost, measured in process: no sockets, no upstream, no server.

    .venv/bin/python bench/overhead.py [--requests 20000] [--otel] [--responses] [--stream] [--redis]
                                       [--all-limits]

Builds the real ASGI app on a fresh SQLite data dir (rate-limited key, usage accounting on),
replaces the upstream call of the chat route with a canned reply, and drives
`POST /v1/chat/completions` through the ASGI interface from one coroutine. What is timed is
everything the gateway adds to a pass-through (auth, parsing and checks, routing, rate
limit, reply, accounting), minus the HTTP server and client, which the bare proxy pays too.
A raw ASGI app that reads the body and answers the same bytes is timed the same way as the
floor. Deterministic enough (no network, one thread) to compare two versions of the code
where the wrk benchmark's machine noise hides a 20 µs change. Metrics are always on; `--otel`
turns tracing on, exporting every call's span to an OTLP sink in another process.
`--responses` also times `POST /v1/responses` on the same route (translated to the canned chat
reply and back), unstored and stored (the row written before the answer is sent).
`--redis` keeps the limits in a throwaway local redis-server (Debian's), as a scaled-out
gateway does: each limited call then waits one loopback round trip, which this one-coroutine
loop times in full. `--all-limits` gives the key tpm and a budget too (settlements on the path).
`--stream` times streamed calls whose canned upstream answer is an OpenAI stream of
`STREAM_CHUNKS` events: relayed as is (`/v1/chat/completions`), and translated event by event
into Anthropic's (`/v1/messages`) and the Responses API's (`/v1/responses`) streams: the
per-chunk path, reported per chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson
import yaml

Message = MutableMapping[str, Any]
App = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

REPLY = (
    b'{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}'
)
BODY = orjson.dumps({"model": "bench-chat", "messages": [{"role": "user", "content": "hello"}]})
RESPONSES_BODY = orjson.dumps({"model": "bench-chat", "input": "hello", "store": False})
STORED_BODY = orjson.dumps({"model": "bench-chat", "input": "hello"})
STREAM_CHUNKS = 50
_CHUNK_HEAD = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000}
STREAM = (
    b"".join(
        b"data: "
        + orjson.dumps(
            {
                **_CHUNK_HEAD,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
        + b"\n\n"
        for delta in [{"role": "assistant", "content": ""}]
        + [{"content": f"w{i} "} for i in range(STREAM_CHUNKS - 2)]
    )
    + b"data: "
    + orjson.dumps(
        {
            **_CHUNK_HEAD,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 48, "total_tokens": 57},
        }
    )
    + b"\n\ndata: [DONE]\n\n"
)
STREAM_EVENTS = [event + b"\n\n" for event in STREAM.split(b"\n\n") if event]
STREAM_BODIES = {
    "/v1/chat/completions": orjson.dumps(
        {"model": "bench-chat", "messages": [{"role": "user", "content": "hello"}], "stream": True}
    ),
    "/v1/messages": orjson.dumps(
        {
            "model": "bench-chat",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hello"}],
            "stream": True,
        }
    ),
    "/v1/responses": orjson.dumps({"model": "bench-chat", "input": "hello", "store": False, "stream": True}),
}


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _call(app: App, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # the client never disconnects
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def _floor(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    message = await receive()
    _ = message.get("body", b"")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(REPLY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": REPLY})


async def _time(app: App, scope: dict[str, Any], count: int, body: bytes = BODY) -> float:
    """Median µs per request over five batches."""
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count // 5):
            status, _ = await _call(app, scope, body)
            if status != 200:
                raise SystemExit(f"HTTP {status}")
        batches.append((time.perf_counter() - start) / (count // 5) * 1e6)
    return statistics.median(batches)


async def main(count: int, responses: bool = False, all_limits: bool = False, stream: bool = False) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="unigate-overhead-"))
    config = {
        "providers": [
            {"name": "up", "protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk"}
        ],
        "models": [{"name": "bench-chat", "routes": [{"provider": "up"}]}],
    }
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    admin = "adm-" + secrets.token_urlsafe(16)
    os.environ.update(
        {
            "UNIGATE_DATA_DIR": str(tmp / "data"),
            "UNIGATE_CONFIG": str(tmp / "config.yaml"),
            "UNIGATE_ADMIN_KEY": admin,
            # As `unigate serve` (one worker) runs; `--workers 2` adds a file lock per limit
            # decision (measure with UNIGATE_WORKERS=2).
            "UNIGATE_WORKERS": os.environ.get("UNIGATE_WORKERS", "1"),
        }
    )
    from unigate.app import create_app
    from unigate.observability.logs import configure_logging

    # Logging as `unigate serve` sets it up, so the per-request access line is in the figure
    # (run with 2>/dev/null to keep it off the terminal).
    configure_logging(os.environ.get("UNIGATE_LOG_LEVEL", "info"))
    from unigate.providers.base import Reply
    from unigate.usage.recorder import Usage

    app = create_app()
    startup: asyncio.Queue[Message] = asyncio.Queue()
    await startup.put({"type": "lifespan.startup"})
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def lifespan_send(message: Message) -> None:
        if message["type"] == "lifespan.startup.complete":
            done.set_result(None)
        elif message["type"] == "lifespan.startup.failed":
            done.set_exception(RuntimeError(message.get("message", "startup failed")))

    lifespan = asyncio.ensure_future(app({"type": "lifespan"}, startup.get, lifespan_send))
    await done
    provider = app.gateway.providers["up"]

    async def events() -> Any:
        for event in STREAM_EVENTS:  # one upstream read per event: the relay's worst case
            yield event

    async def canned(call: Any, target: Any) -> Reply:
        if call.stream:
            return Reply(content_type=b"text/event-stream", stream=events(), usage=Usage(9, 48))
        return Reply(body=REPLY, usage=Usage(9, 9))

    provider.chat = canned  # type: ignore[method-assign]
    admin_scope = _scope("POST", "/admin/keys", [(b"authorization", f"Bearer {admin}".encode())])
    limits: dict[str, Any] = {"rpm": 1_000_000}
    if all_limits:
        limits.update(tpm=1_000_000_000, budget=1e9)
    _, data = await _call(app, admin_scope, orjson.dumps({"name": "bench", **limits}))
    key = orjson.loads(data)["key"]
    headers = [(b"authorization", f"Bearer {key}".encode()), (b"content-type", b"application/json")]
    scope = _scope("POST", "/v1/chat/completions", headers)
    await _time(app, scope, 2000)  # warm-up
    floor = await _time(_floor, scope, count)
    gateway = await _time(app, scope, count)
    print(f"raw ASGI floor: {floor:.1f} us/request")
    print(f"unigate (upstream call replaced by a canned reply): {gateway:.1f} us/request")
    print(f"unigate's own cost: {gateway - floor:.1f} us/request")
    if responses:
        rscope = _scope("POST", "/v1/responses", headers)
        await _time(app, rscope, 1000, RESPONSES_BODY)  # warm-up
        unstored = await _time(app, rscope, count, RESPONSES_BODY)
        stored = await _time(app, rscope, max(count // 10, 500), STORED_BODY)
        print(f"POST /v1/responses, unstored: {unstored:.1f} us/request ({unstored - gateway:+.1f} vs chat)")
        print(f"POST /v1/responses, stored: {stored:.1f} us/request ({stored - gateway:+.1f} vs chat)")
    if stream:
        for path, body in STREAM_BODIES.items():
            sscope = _scope("POST", path, headers)
            await _time(app, sscope, 500, body)  # warm-up
            took = await _time(app, sscope, max(count // 10, 500), body)
            per_chunk = (took - gateway) / STREAM_CHUNKS
            shown = f"{took:.1f} us/request, {per_chunk:.2f} us/chunk"
            print(f"POST {path}, stream of {STREAM_CHUNKS} chunks: {shown}")
    imported = any(name.startswith("opentelemetry") for name in sys.modules)
    print(f"tracing {'on' if app.gateway.tracing else 'off'}; opentelemetry imported: {imported}")
    print(f"limits: {type(app.gateway.limits.counters).__name__}, key {limits}")
    await startup.put({"type": "lifespan.shutdown"})
    await lifespan


# A collector that accepts and drops OTLP/HTTP exports (--otel), run as its own process so
# its work is not timed as the gateway's.
SINK = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
"""


def _redis_server() -> subprocess.Popen[bytes]:
    """A throwaway redis-server on a free port, no persistence; UNIGATE_REDIS_URL points at it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    server = subprocess.Popen(["redis-server", *args], stdout=subprocess.DEVNULL)
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            time.sleep(0.02)
    os.environ["UNIGATE_REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    return server


def _otlp_sink() -> subprocess.Popen[bytes]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = subprocess.Popen([sys.executable, "-c", SINK, str(port)])
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    return sink


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--otel", action="store_true", help="tracing on, spans exported to a local sink")
    parser.add_argument("--responses", action="store_true", help="also time POST /v1/responses")
    parser.add_argument("--stream", action="store_true", help="also time streamed calls, per chunk")
    parser.add_argument("--redis", action="store_true", help="limits in a local redis-server")
    parser.add_argument("--all-limits", action="store_true", help="the key has tpm and a budget too")
    args = parser.parse_args()
    import uvloop

    sink = _otlp_sink() if args.otel else None
    os.environ.pop("UNIGATE_REDIS_URL", None)  # one machine unless --redis
    redis = _redis_server() if args.redis else None
    uvloop.install()
    try:
        asyncio.run(main(args.requests, args.responses, args.all_limits, args.stream))
    finally:
        for child in (sink, redis):
            if child is not None:
                child.terminate()
    sys.exit(0)
