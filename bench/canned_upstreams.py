"""The upstreams of `overhead.py`'s gateway, replaced by canned answers: a chat reply and
stream (OpenAI's format), a Responses API reply and an Anthropic Messages reply. The calls
still make their bodies as for the wire; only the network is left out."""

from __future__ import annotations

from typing import Any

import orjson

REPLY = (
    b'{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}'
)
RESPONSES_REPLY = (
    b'{"id":"resp_bench","object":"response","created_at":1700000000,"status":"completed",'
    b'"model":"gpt-bench","output":[{"id":"msg_bench","type":"message","role":"assistant","status":"completed",'
    b'"content":[{"type":"output_text","text":"Hello!","annotations":[]}]}],'
    b'"usage":{"input_tokens":9,"output_tokens":9,"total_tokens":18}}'
)
MESSAGE_REPLY = (
    b'{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench",'
    b'"content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,'
    b'"usage":{"input_tokens":9,"output_tokens":9}}'
)
STREAM_CHUNKS = 50
_CHUNK_HEAD = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000}
# A long answer (~400 KB of text in one-word deltas): translated streams must stay linear in it.
LONG_CHUNKS = 80_000


def stream_events(chunks: int) -> list[bytes]:
    """An OpenAI chat stream of `chunks` events, each its own upstream read (the relay's worst
    case): the role, one-word deltas, the finish with usage, then `[DONE]`."""
    deltas = [{"role": "assistant", "content": ""}] + [{"content": f"w{i} "} for i in range(chunks - 2)]
    events = [
        b"data: "
        + orjson.dumps(
            {
                **_CHUNK_HEAD,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
        + b"\n\n"
        for delta in deltas
    ]
    last = {
        **_CHUNK_HEAD,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": chunks - 2, "total_tokens": chunks + 7},
    }
    return [*events, b"data: " + orjson.dumps(last) + b"\n\n", b"data: [DONE]\n\n"]


STREAM_EVENTS = stream_events(STREAM_CHUNKS)


def canned_upstreams(app: Any) -> list[list[bytes]]:
    """Every configured upstream's call replaced by a canned answer: the chat one, the
    Responses API one and Anthropic's (whose bodies are still made as for the wire). Returns
    what the chat upstream streams, in a list `--stream` swaps a long answer into."""
    from unigate.providers.base import Reply
    from unigate.usage.recorder import Usage

    answer = [STREAM_EVENTS]
    providers: Any = app.gateway.providers

    async def events() -> Any:
        for event in answer[0]:  # one upstream read per event: the relay's worst case
            yield event

    async def canned(call: Any, target: Any) -> Reply:
        if call.stream:
            return Reply(content_type=b"text/event-stream", stream=events(), usage=Usage(9, 48))
        return Reply(body=REPLY, usage=Usage(9, 9))

    async def canned_response(body: bytes, timeouts: Any, stream: bool) -> Reply:
        return Reply(body=RESPONSES_REPLY, usage=Usage(9, 9), wire="responses")

    async def canned_message(
        path: str, body: bytes, target: Any, stream: bool, wire: str, *rest: Any
    ) -> Reply:
        return Reply(body=MESSAGE_REPLY, usage=Usage(9, 9), wire=wire)

    providers["up"].chat = canned
    providers["up-responses"].responses.create = canned_response
    providers["up-anthropic"].relay_same_format = canned_message
    return answer
