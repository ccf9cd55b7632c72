"""Long streamed answers through the translators: what they accumulate (the answer's text, a
tool call's arguments) is kept as pieces (`translate/pieces.py`) and read whole only where
an event or the final object needs it. A long answer of small deltas, fed in network-sized
pieces, must come out complete in every dialect. (`bench/overhead.py --stream` times a long
answer per chunk; appending to a string had made it quadratic.)"""

from __future__ import annotations

from typing import Any

import orjson

from tests.support.sse_events import feed_in_pieces, json_events
from unigate.translate.anthropic import OpenAIToAnthropicStream
from unigate.translate.gemini import GeminiToOpenAIStream, OpenAIToGeminiStream
from unigate.translate.pieces import Pieces
from unigate.translate.responses_request import parse_request
from unigate.translate.responses_response import ResponseFrame
from unigate.translate.responses_stream import ChatToResponsesStream

Json = dict[str, Any]
WORDS = [f"w{i} " for i in range(3000)] + ["héllo 世界 🎵"]
ANSWER = "".join(WORDS)
ARGUMENTS = orjson.dumps({"path": "a.py", "content": "x = 1\n" * 2000}).decode()
FRAGMENTS = [ARGUMENTS[i : i + 7] for i in range(0, len(ARGUMENTS), 7)]


def test_pieces_join_once_and_keep_counting() -> None:
    text = Pieces()
    assert text.joined() == "" and text.chars == 0
    for word in ("a", "bc", "é"):
        text.add(word)
    assert text.chars == 4 and text.joined() == "abcé"
    assert text.joined() == "abcé"  # read again: the same text
    text.add("!")
    assert text.joined() == "abcé!" and text.chars == 5


def _chat_stream() -> bytes:
    """An OpenAI chat stream: the answer in one-word deltas, then a tool call in 7-character
    argument fragments, the finish and usage."""
    head = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: Json, finish: str | None = None) -> bytes:
        body = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": word}) for word in WORDS]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": ""}}
    out.append(chunk({"tool_calls": [call]}))
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in FRAGMENTS]
    out.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 3, "completion_tokens": 4000, "total_tokens": 4003}
    out.append(b"data: " + orjson.dumps({**head, "choices": [], "usage": usage}) + b"\n\n")
    return b"".join(out) + b"data: [DONE]\n\n"


def test_a_long_answer_to_an_anthropic_client() -> None:
    events = json_events(feed_in_pieces(OpenAIToAnthropicStream("m"), _chat_stream(), 4096))
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == ANSWER
    assert "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta") == ARGUMENTS
    assert events[-1] == {"type": "message_stop"}


def test_a_long_answer_to_a_responses_client() -> None:
    frame = ResponseFrame.for_request(parse_request({"model": "m", "input": "x"}))
    translator = ChatToResponsesStream(frame)
    events = json_events(feed_in_pieces(translator, _chat_stream(), 4096))
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == ANSWER
    [text_done] = [e for e in events if e["type"] == "response.output_text.done"]
    assert text_done["text"] == ANSWER
    [args_done] = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert args_done["arguments"] == ARGUMENTS
    message, call = translator.final()["output"]
    assert message["content"][0]["text"] == ANSWER and call["arguments"] == ARGUMENTS


def test_a_long_answer_to_a_gemini_client() -> None:
    events = json_events(feed_in_pieces(OpenAIToGeminiStream("m"), _chat_stream(), 4096))
    parts = [part for e in events for part in e["candidates"][0]["content"]["parts"]]
    assert "".join(part.get("text", "") for part in parts) == ANSWER
    [call] = [part["functionCall"] for part in parts if "functionCall" in part]
    assert call == {"name": "write", "args": orjson.loads(ARGUMENTS)}


def test_a_long_answer_from_a_gemini_upstream() -> None:
    events = [{"candidates": [{"content": {"parts": [{"text": word}]}, "index": 0}]} for word in WORDS]
    events[-1]["candidates"][0]["finishReason"] = "STOP"
    data = b"".join(b"data: " + orjson.dumps(e) + b"\r\n\r\n" for e in events)
    chunks = json_events(feed_in_pieces(GeminiToOpenAIStream("m", True), data, 4096))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == ANSWER
