"""The fake OpenAI-compatible upstream's replies, and a pure-Python server for them.

nginx serves these same bytes when it is available (see `upstream.py`); this server is the
fallback. Both answer `POST /v1/chat/completions` with a fixed chat completion (with `usage`)
and `POST /stream/v1/chat/completions` with a fixed SSE stream (ending in a usage-only chunk
and `[DONE]`): nginx cannot branch on the request body, so streaming gets its own path.

Run as a script: `python bench/fake_upstream.py --port 8080`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, cast

CHAT_PATH = "/v1/chat/completions"
STREAM_PATH = "/stream/v1/chat/completions"

CHAT_REPLY = (
    '{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",'
    '"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?"},'
    '"logprobs":null,"finish_reason":"stop"}],'
    '"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}'
)

_CHUNK = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini",'
_STREAM_EVENTS = (
    _CHUNK + '"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
    _CHUNK + '"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}',
    _CHUNK + '"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}]}',
    _CHUNK + '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
    _CHUNK + '"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}',
    "[DONE]",
)
STREAM_REPLY = "".join(f"data: {event}\n\n" for event in _STREAM_EVENTS)

# The same answer from an upstream that serves the Responses API (`responses: native`): typed
# events with sequence numbers, usage on `response.completed`, no [DONE].
RESPONSES_PATH = "/responses/v1/responses"
_RESP = (
    '{"id":"resp_bench","object":"response","created_at":1700000000,"status":"%s","model":"gpt-4o-mini",'
    '"output":%s,"usage":%s}'
)
_MSG = '{"id":"msg_bench","type":"message","status":"%s","role":"assistant","content":%s}'
_PART = '{"type":"output_text","annotations":[],"logprobs":[],"text":"%s"}'
_AT = '"item_id":"msg_bench","output_index":0,"content_index":0'
_DONE_ITEM = _MSG % ("completed", "[" + _PART % "Hello!" + "]")
_USAGE = (
    '{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,'
    '"output_tokens_details":{"reasoning_tokens":0},"total_tokens":11}'
)
_RESPONSES_EVENTS = (
    ("response.created", '"response":' + _RESP % ("in_progress", "[]", "null")),
    ("response.in_progress", '"response":' + _RESP % ("in_progress", "[]", "null")),
    ("response.output_item.added", '"output_index":0,"item":' + _MSG % ("in_progress", "[]")),
    ("response.content_part.added", _AT + ',"part":' + _PART % ""),
    ("response.output_text.delta", _AT + ',"delta":"Hello","logprobs":[]'),
    ("response.output_text.delta", _AT + ',"delta":"!","logprobs":[]'),
    ("response.output_text.done", _AT + ',"text":"Hello!","logprobs":[]'),
    ("response.content_part.done", _AT + ',"part":' + _PART % "Hello!"),
    ("response.output_item.done", '"output_index":0,"item":' + _DONE_ITEM),
    ("response.completed", '"response":' + _RESP % ("completed", f"[{_DONE_ITEM}]", _USAGE)),
)
RESPONSES_REPLY = "".join(
    f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{n},{fields}}}\n\n'
    for n, (kind, fields) in enumerate(_RESPONSES_EVENTS)
)

# path -> (content type, body)
ROUTES: dict[str, tuple[str, str]] = {
    CHAT_PATH: ("application/json", CHAT_REPLY),
    STREAM_PATH: ("text/event-stream", STREAM_REPLY),
    RESPONSES_PATH: ("text/event-stream", RESPONSES_REPLY),
}


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


_RESPONSES = {path.encode(): _response("200 OK", ct, body.encode()) for path, (ct, body) in ROUTES.items()}
_NOT_FOUND = _response("404 Not Found", "application/json", b'{"error":{"message":"not found"}}')


class _Connection(asyncio.Protocol):
    """HTTP/1.1 keep-alive connection parsed with httptools (a uvicorn[standard] dependency)."""

    def __init__(self) -> None:
        import httptools

        self._parser = httptools.HttpRequestParser(self)
        self._error = httptools.HttpParserError
        self._url = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except self._error:
            if self._transport is not None:
                self._transport.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._url = b""

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_message_complete(self) -> None:
        if self._transport is None:
            return
        path = self._url.split(b"?", 1)[0]
        self._transport.write(_RESPONSES.get(path, _NOT_FOUND))
        if not self._parser.should_keep_alive():
            self._transport.close()


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Connection, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    run: Callable[[Coroutine[Any, Any, None]], None]
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    with contextlib.suppress(KeyboardInterrupt):
        run(serve(args.port))


if __name__ == "__main__":
    main()
