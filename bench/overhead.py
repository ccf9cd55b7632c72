"""unigate's own per-request cost, measured in process: no sockets, no upstream, no server.

    .venv/bin/python bench/overhead.py [--requests 20000] [--layers] [--otel] [--responses] [--stream]
                                       [--long-answer 80000] [--redis] [--rpm-only] [--agent]

Builds the real ASGI app on a fresh SQLite data dir (a key with rpm, tpm and a budget unless
`--rpm-only`; usage accounting, metrics, the request log and the access line on),
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
gateway does: the key's counters are leased in slices (`limits/redis_lease.py`), so only a
call that finds a slice missing or lapsed waits a loopback round trip, which this
one-coroutine loop times in full.
`--layers` prices each layer (auth, checks, routing, limits, accounting, metrics, logs, reply)
by timing the call with it and with a stub in its place, in interleaved pairs. The stubs replace
module functions and class attributes, which compiled modules call directly and do not let
replace: `--layers` runs every module from its source (UNIGATE_COMPILED=0, src/unigate/compiled.py),
so its figures are the pure-Python build's.
`--agent` times a coding agent's calls (`agent_body.py`: a conversation of tool calls resent
with two more messages each call, 27-45 KB, to `/v1/messages`) with the limited key and with
one without limits: the limits' cost at the size agents send.
`--stream` times streamed calls whose canned upstream answer is an OpenAI stream of
`STREAM_CHUNKS` events: relayed as is (`/v1/chat/completions`), and translated event by event
into Anthropic's (`/v1/messages`) and the Responses API's (`/v1/responses`) streams: the
per-chunk path, reported per chunk; then one answer of `--long-answer` events on each path,
whose per-chunk figure stays near the short one's only if nothing grows with the answer.
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
from canned_upstreams import LONG_CHUNKS, REPLY, STREAM_CHUNKS, STREAM_EVENTS, canned_upstreams, stream_events

Message = MutableMapping[str, Any]
App = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

BODY = orjson.dumps({"model": "bench-chat", "messages": [{"role": "user", "content": "hello"}]})
RESPONSES_BODY = orjson.dumps({"model": "bench-chat", "input": "hello", "store": False})
STORED_BODY = orjson.dumps({"model": "bench-chat", "input": "hello"})
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
        # As `unigate serve`'s protocol advertises it: whole replies come as one message.
        "extensions": {"unigate.response": {}},
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
    if sent[0]["type"] == "unigate.response":
        return sent[0]["status"], sent[0]["body"]
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


async def _time(app: App, scope: dict[str, Any], count: int, body: bytes | list[bytes] = BODY) -> float:
    """Median µs per request over five batches: the process's CPU time (every thread's, so the
    background writers count), which other jobs on a shared machine disturb far less than the
    wall clock. A list of bodies is sent in turn, the batches going on through it."""
    bodies = [body] if isinstance(body, bytes) else body
    batches = []
    sent = 0
    for _ in range(5):
        start = time.process_time()
        for _ in range(count // 5):
            status, _ = await _call(app, scope, bodies[sent % len(bodies)])
            sent += 1
            if status != 200:
                raise SystemExit(f"HTTP {status}")
        batches.append((time.process_time() - start) / (count // 5) * 1e6)
    return statistics.median(batches)


# The performance target for the gateway's own layers (docs/architecture.md).
TARGET_OWN_US = 11.0
# The layers `--layers` prices one by one, in the order a request meets them.
LAYERS = ("auth", "checks", "routing", "limits", "accounting", "metrics", "logs", "reply")


class _Stubs:
    """Each layer of a chat call swapped for a stub that hands back what the real layer
    produced once (the principal, the parsed body, the route, a reply sent from ready bytes),
    so timing the call with and without the stub prices that layer alone. Limits are priced by
    a key without limits: what remains of them is then skipped by the code itself."""

    def __init__(self, app: Any, key_headers: list[tuple[bytes, bytes]], free_headers: list[Any]) -> None:
        self.app = app
        self.limited = _scope("POST", "/v1/chat/completions", key_headers)
        self.free = _scope("POST", "/v1/chat/completions", free_headers)
        self._undo: list[tuple[Any, str, Any]] = []

    def _set(self, owner: Any, name: str, value: Any) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def restore(self) -> None:
        while self._undo:
            owner, name, value = self._undo.pop()
            setattr(owner, name, value)

    async def capture(self) -> None:
        """Run one real call with spies on each stubbed seam, keeping what each produced."""
        import unigate.api.openai.text as text_module
        import unigate.api.serving.serve as serve_module
        import unigate.app as app_module
        from unigate.edge.asgi import Request

        seen: dict[str, Any] = {}
        real_auth, real_check = vars(app_module)["authenticate"], vars(text_module)["CHAT"].check
        real_json, real_route = Request.json_object, self.app.gateway.router.run

        async def auth(request: Any, cache: Any, *rest: Any) -> Any:
            seen["principal"] = await real_auth(request, cache, *rest)
            return seen["principal"]

        async def json_object(request: Any, limit: int) -> Any:
            seen["json"] = await real_json(request, limit)
            return seen["json"]

        def check(payload: Any) -> Any:
            seen["checked"] = real_check(payload)
            return seen["checked"]

        async def route(entry: Any, model: str, attempt: Any) -> Any:
            seen["routed"] = await real_route(entry, model, attempt)
            return seen["routed"]

        self._set(app_module, "authenticate", auth)
        self._set(Request, "json_object", json_object)
        self._set(text_module, "CHAT", _Check(check))
        self._set(self.app.gateway.router, "run", route)
        try:
            await _call(self.app, self.limited, BODY)
        finally:
            self.restore()
        self.seen = seen
        self.modules = (app_module, text_module, serve_module, Request)

    def stub(self, layer: str) -> dict[str, Any]:
        """Swap `layer` for its stub; the scope to time with."""
        app_module, text_module, serve_module, request_class = self.modules
        gw, seen = self.app.gateway, self.seen
        if layer == "auth":

            async def principal(request: Any, cache: Any, *rest: Any) -> Any:
                return seen["principal"]

            self._set(app_module, "authenticate", principal)
        elif layer == "checks":

            async def parsed(request: Any, limit: int) -> Any:
                return seen["json"]

            self._set(request_class, "json_object", parsed)
            self._set(text_module, "CHAT", _Check(lambda payload: seen["checked"]))
        elif layer == "routing":
            target = seen["routed"][1]

            async def routed(entry: Any, model: str, attempt: Any) -> Any:
                return await attempt(target), target

            self._set(gw.router, "run", routed)
        elif layer == "limits":
            return self.free
        elif layer == "accounting":
            self._set(gw.usage, "record", _nothing)
        elif layer == "metrics":
            self._set(self.app, "_count_request", _nothing)
            self._set(gw.metrics, "usage", _nothing)
        elif layer == "logs":
            self._set(self.app, "_access", _Off())
            self._set(gw.request_log, "add", _nothing)
        elif layer == "reply":
            from unigate.api.serving.relay import Outcome

            body = {"type": "http.response.body", "body": REPLY}
            done = Outcome(200, True)

            async def sent(request: Any, reply: Any, framing: Any, keepalive: float) -> Any:
                # A fresh head each time: the edge appends the rate-limit headers to its list.
                await request.send({"type": "http.response.start", "status": 200, "headers": []})
                await request.send(body)
                return done

            self._set(serve_module, "send_reply", sent)
        return self.limited


class _Check:
    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check


class _Off:
    def enabled(self) -> bool:
        return False


def _nothing(*args: Any) -> None:
    return None


async def _layers(app: Any, stubs: _Stubs, count: int, own: float) -> None:
    """Each layer's cost: the call timed with the layer and without it (its stub), in pairs."""
    await stubs.capture()
    costs = {}
    for layer in LAYERS:
        pairs = []
        for _ in range(3):
            full = await _time(app, stubs.limited, count)
            scope = stubs.stub(layer)
            try:
                without = await _time(app, scope, count)
            finally:
                stubs.restore()
            pairs.append(full - without)
        costs[layer] = statistics.median(pairs)
    print("per layer (the call timed with the layer and with a stub in its place, median of 3 pairs):")
    for layer, cost in costs.items():
        print(f"  {layer:<11} {cost:5.1f} us")
    rest = own - sum(costs.values())
    print(f"  {'the rest':<11} {rest:5.1f} us (edge, request object, serving scaffolding)")


async def _agent(
    app: App, limited: list[tuple[bytes, bytes]], free: list[tuple[bytes, bytes]], count: int
) -> None:
    """A coding agent's calls (`agent_body.py`: sessions of a growing conversation, 27-45 KB,
    sent to `/v1/messages` and translated to the canned chat reply), with the limited key and
    with one without limits: what the limits cost a call of that size. Then the same
    conversations as Codex sends them to `/v1/responses`, translated to the chat reply and
    relayed to an upstream with its own Responses API, and as Gemini CLI sends them to
    `:generateContent`, translated, with the limited key."""
    from agent_body import bodies, gemini_bodies, responses_bodies

    calls = bodies(count)
    kb = sum(map(len, calls)) / len(calls) / 1024
    took = {}
    for name, headers in (("limited", limited), ("free", free)):
        scope = _scope("POST", "/v1/messages", headers)
        await _time(app, scope, min(count, 100), calls)  # warm-up
        took[name] = await _time(app, scope, count, calls)
    print(
        f"POST /v1/messages, a coding agent's calls ({kb:.0f} KB on average, resent growing): "
        f"{took['limited']:.1f} us/request with the limited key, {took['free']:.1f} without limits "
        f"(limits {took['limited'] - took['free']:+.1f})"
    )
    scope = _scope("POST", "/v1/messages", limited)
    relayed = bodies(count, model="bench-anthropic")
    await _time(app, scope, min(count, 100), relayed)  # warm-up
    took["relayed"] = await _time(app, scope, count, relayed)
    print(f"POST /v1/messages, the same calls relayed to Anthropic's API: {took['relayed']:.1f} us/request")
    scope = _scope("POST", "/v1/responses", limited)
    for route, model in (
        ("translated to chat", "bench-chat"),
        ("relayed to a Responses API", "bench-responses"),
    ):
        codex = responses_bodies(count, model=model)
        await _time(app, scope, min(count, 100), codex)  # warm-up
        took[route] = await _time(app, scope, count, codex)
        print(
            f"POST /v1/responses, the same calls as Codex sends them, {route}: {took[route]:.1f} us/request"
        )
    gemini = gemini_bodies(count)
    scope = _scope("POST", "/v1beta/models/bench-chat:generateContent", limited)
    await _time(app, scope, min(count, 100), gemini)  # warm-up
    took["gemini"] = await _time(app, scope, count, gemini)
    print(
        "POST :generateContent, the same calls as Gemini CLI sends them, translated to chat: "
        f"{took['gemini']:.1f} us/request"
    )


async def _streams(
    app: App,
    headers: list[tuple[bytes, bytes]],
    gateway: float,
    count: int,
    answer: list[list[bytes]],
    long_answer: int,
) -> None:
    """`--stream`: each streaming path's cost per chunk, for a short answer and a long one."""
    for path, body in STREAM_BODIES.items():
        sscope = _scope("POST", path, headers)
        await _time(app, sscope, 500, body)  # warm-up
        took = await _time(app, sscope, max(count // 10, 500), body)
        per_chunk = (took - gateway) / STREAM_CHUNKS
        shown = f"{took:.1f} us/request, {per_chunk:.2f} us/chunk"
        print(f"POST {path}, stream of {STREAM_CHUNKS} chunks: {shown}")
    # One long answer per path: a per-chunk cost that grows with the answer is quadratic.
    answer[0] = stream_events(long_answer)
    for path, body in STREAM_BODIES.items():
        took = await _time(app, _scope("POST", path, headers), 5, body)
        print(f"POST {path}, one answer of {long_answer:,} chunks: {took / long_answer:.2f} us/chunk")
    answer[0] = STREAM_EVENTS


async def main(
    count: int,
    responses: bool = False,
    all_limits: bool = False,
    stream: bool = False,
    layers: bool = False,
    agent: bool = False,
    long_answer: int = LONG_CHUNKS,
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="unigate-overhead-"))
    config = {
        "providers": [
            {"name": "up", "protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk"},
            # An upstream with its own Responses API (OpenAI's): Codex's calls are relayed to it.
            {
                "name": "up-responses",
                "protocol": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk",
                "responses": "native",
            },
            # Anthropic's own API: Claude Code's calls are relayed to it.
            {
                "name": "up-anthropic",
                "protocol": "anthropic",
                "base_url": "http://127.0.0.1:9",
                "api_key": "sk",
            },
        ],
        "models": [
            {"name": "bench-chat", "routes": [{"provider": "up"}]},
            {"name": "bench-responses", "routes": [{"provider": "up-responses", "model": "gpt-bench"}]},
            {"name": "bench-anthropic", "routes": [{"provider": "up-anthropic", "model": "claude-bench"}]},
        ],
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
    answer = canned_upstreams(app)
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
    own = gateway - floor
    verdict = "PASS" if own <= TARGET_OWN_US else f"FAIL, {own - TARGET_OWN_US:.1f} us over"
    print(f"unigate's own cost: {own:.1f} us/request (target <= {TARGET_OWN_US:g} us: {verdict})")
    if layers or agent:
        _, data = await _call(app, admin_scope, orjson.dumps({"name": "bench-free"}))
        free = [(b"authorization", f"Bearer {orjson.loads(data)['key']}".encode()), headers[1]]
    if layers:
        await _layers(app, _Stubs(app, headers, free), max(count // 4, 1000), gateway - floor)
    if agent:
        await _agent(app, headers, free, max(count // 20, 250))
    if responses:
        rscope = _scope("POST", "/v1/responses", headers)
        await _time(app, rscope, 1000, RESPONSES_BODY)  # warm-up
        unstored = await _time(app, rscope, count, RESPONSES_BODY)
        stored = await _time(app, rscope, max(count // 10, 500), STORED_BODY)
        print(f"POST /v1/responses, unstored: {unstored:.1f} us/request ({unstored - gateway:+.1f} vs chat)")
        print(f"POST /v1/responses, stored: {stored:.1f} us/request ({stored - gateway:+.1f} vs chat)")
    if stream:
        await _streams(app, headers, gateway, count, answer, long_answer)
    imported = any(name.startswith("opentelemetry") for name in sys.modules)
    print(f"tracing {'on' if app.gateway.tracing else 'off'}; opentelemetry imported: {imported}")
    print(f"limits: {type(app.gateway.limits.counters).__name__}, key {limits}")
    import unigate

    problem = unigate.COMPILED_PROBLEM
    print("modules: compiled" if problem is None else f"modules: from source ({problem})")
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
    parser.add_argument("--long-answer", type=int, default=LONG_CHUNKS, help="--stream's long answer, chunks")
    parser.add_argument("--redis", action="store_true", help="limits in a local redis-server")
    parser.add_argument("--rpm-only", action="store_true", help="the key has an rpm limit only")
    parser.add_argument("--layers", action="store_true", help="also price each layer of the call")
    parser.add_argument("--agent", action="store_true", help="also time a coding agent's calls (~40 KB)")
    args = parser.parse_args()
    if args.layers:
        os.environ["UNIGATE_COMPILED"] = "0"  # see `--layers` above: the stubs need the source
    import uvloop

    sink = _otlp_sink() if args.otel else None
    os.environ.pop("UNIGATE_REDIS_URL", None)  # one machine unless --redis
    redis = _redis_server() if args.redis else None
    uvloop.install()
    try:
        asyncio.run(
            main(
                args.requests,
                args.responses,
                not args.rpm_only,
                args.stream,
                args.layers,
                args.agent,
                args.long_answer,
            )
        )
    finally:
        for child in (sink, redis):
            if child is not None:
                child.terminate()
    sys.exit(0)
