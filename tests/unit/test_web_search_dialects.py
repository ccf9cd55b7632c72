"""Hosted web search between dialects through its canonical form (`web_search_options` in,
`annotations` and `web_searches` out): Anthropic's server tool and citations, Gemini's Google
Search grounding (byte offsets), the sandbox's offline search; bodies and byte-split streams."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support.sse_events import feed_in_pieces, json_events
from unigate.errors import InvalidRequest
from unigate.providers.base import TextCall
from unigate.translate.anthropic import (
    AnthropicToOpenAIStream,
    OpenAIToAnthropicStream,
    anthropic_to_openai_response,
    openai_to_anthropic_request,
    openai_to_anthropic_response,
    translate_messages,
)
from unigate.translate.gemini import (
    GeminiToOpenAIStream,
    OpenAIToGeminiStream,
    gemini_to_openai_request,
    gemini_to_openai_response,
    openai_to_gemini_request,
    openai_to_gemini_response,
)
from unigate.translate.translation import Dropped
from unigate.translate.web_search import citations, searches
from unigate_sandbox.chat import plan_chat

Json = dict[str, Any]
ASK = {"model": "m", "messages": [{"role": "user", "content": "Tides in Brest?"}]}
PAGE = "https://tides.test/brest"
ANSWER = "Données: high tide at 06:12. More later."
SPAN = (0, 29)  # "Données: high tide at 06:12."


def _merged(chunks: list[Json]) -> Json:
    """The canonical message a stream of chat chunks adds up to."""
    out: Json = {"content": "", "annotations": [], "web_searches": []}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            delta = choice["delta"]
            out["content"] += delta.get("content") or ""
            out["annotations"] += delta.get("annotations") or []
            out["web_searches"] += delta.get("web_searches") or []
    return out


# ---------------------------------------------------------------- Anthropic upstream

ANTHROPIC_BLOCKS: list[Json] = [
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "tides brest"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": PAGE, "title": "Brest tides", "encrypted_content": "x"}]},
    {"type": "text", "text": ANSWER[: SPAN[1]], "citations": [
        {"type": "web_search_result_location", "url": PAGE, "title": "Brest tides",
         "cited_text": "06:12", "encrypted_index": "y"}]},
    {"type": "text", "text": ANSWER[SPAN[1] :]},
]  # fmt: skip


def _check_canonical(message: Json) -> None:
    assert message["content"] == ANSWER
    [cite] = citations(message["annotations"])
    assert (cite.url, cite.start, cite.end) == (PAGE, *SPAN)
    [found] = searches(message["web_searches"])
    assert found.queries == ("tides brest",) and found.sources[0].url == PAGE


def test_anthropic_upstream_search_request_and_answer() -> None:
    place = {"city": "Brest", "country": "FR"}
    options = {"user_location": {"type": "approximate", "approximate": place}}
    body = openai_to_anthropic_request({**ASK, "web_search_options": options}, "claude")
    location = {"type": "approximate", **place}
    assert body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "user_location": location}]
    answer = {"id": "msg_1", "content": ANTHROPIC_BLOCKS, "stop_reason": "end_turn", "usage": {}}
    _check_canonical(anthropic_to_openai_response(answer, "m")["choices"][0]["message"])


def _anthropic_stream() -> bytes:
    events: list[Json] = [{"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}}]
    use, result, cited, rest = ANTHROPIC_BLOCKS
    events += [
        {"type": "content_block_start", "index": 0, "content_block": {**use, "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"query": "tides'}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": ' brest"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": result},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "text", "text": "", "citations": []}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "citations_delta", "citation": cited["citations"][0]}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": cited["text"]}},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": rest["text"]}},
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


def test_anthropic_upstream_search_stream() -> None:
    out = feed_in_pieces(AnthropicToOpenAIStream("m", True), _anthropic_stream(), 5)
    _check_canonical(_merged(json_events(out)))


# ---------------------------------------------------------------- Anthropic clients


def test_anthropic_client_search_tool_and_server_tools() -> None:
    payload = {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": "Tides?"},
            {"role": "assistant", "content": ANTHROPIC_BLOCKS},  # a searched turn, replayed
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 2,
             "user_location": {"type": "approximate", "city": "Brest"}},
            {"type": "code_execution_20250522", "name": "code_execution"},
            {"name": "lookup", "input_schema": {"type": "object"}},
        ],
    }  # fmt: skip
    dropped = translate_messages(payload)
    chat = dropped.canonical
    assert chat["web_search_options"] == {
        "user_location": {"type": "approximate", "approximate": {"city": "Brest"}}
    }
    assert [t["function"]["name"] for t in chat["tools"]] == ["lookup"]
    assert chat["messages"][1] == {"role": "assistant", "content": ANSWER}
    assert [(t.name, t.param) for t in dropped.hosted] == [("code_execution_20250522", "tools[1]")]
    assert sorted(dropped.fields) == ["tools.code_execution_20250522", "tools.web_search_20250305.max_uses"]


def _canonical_answer() -> Json:
    """What the sandbox answers with web search on: the canonical form of a searched answer."""
    plan = plan_chat({**ASK, "web_search_options": {"search_context_size": "low"}})
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "message": plan.choices[0].message(),
                                             "finish_reason": "stop"}], "usage": {}}  # fmt: skip


def test_anthropic_client_gets_search_blocks_and_cited_text() -> None:
    answer = _canonical_answer()
    message = answer["choices"][0]["message"]
    body = openai_to_anthropic_response(answer, "m")
    kinds = [b["type"] for b in body["content"]]
    assert kinds[:2] == ["server_tool_use", "web_search_tool_result"]
    use, result = body["content"][:2]
    assert use["input"] == {"query": "Tides in Brest?"} and result["tool_use_id"] == use["id"]
    assert [r["url"] for r in result["content"]] == [s["url"] for s in message["web_searches"][0]["sources"]]
    texts = body["content"][2:]
    assert "".join(b["text"] for b in texts) == message["content"]
    cited = [b for b in texts if b.get("citations")]
    assert [b["text"] for b in cited] == [c["url_citation"]["title"] for c in message["annotations"]]
    assert all(b["citations"][0]["cited_text"] == b["text"] for b in cited)
    assert body["usage"]["server_tool_use"] == {"web_search_requests": 1}


def _sandbox_chunks() -> bytes:
    import asyncio

    from unigate_sandbox.chat import chat_reply

    payload = {**ASK, "stream": True, "web_search_options": {}}
    reply = chat_reply(TextCall("chat", b"", payload, "m", True, True))

    async def collect() -> bytes:
        assert reply.stream is not None
        return b"".join([run async for run in reply.stream])

    return asyncio.run(collect())


def test_sandbox_stream_carries_the_search_and_its_citations() -> None:
    merged = _merged(json_events(_sandbox_chunks()))
    found = citations(merged["annotations"])
    assert len(found) == 3 and all(
        merged["content"][c.start : c.end].startswith("Tides Brest") for c in found
    )
    assert searches(merged["web_searches"])[0].queries == ("Tides in Brest?",)


def test_anthropic_client_stream_gets_citations_deltas() -> None:
    events = json_events(feed_in_pieces(OpenAIToAnthropicStream("m"), _sandbox_chunks(), 5))
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["server_tool_use", "web_search_tool_result", "text"]
    query = next(e["delta"] for e in events if e.get("delta", {}).get("type") == "input_json_delta")
    assert orjson.loads(query["partial_json"]) == {"query": "Tides in Brest?"}
    notes = [e for e in events if e.get("delta", {}).get("type") == "citations_delta"]
    assert len(notes) == 3 and {e["index"] for e in notes} == {2}
    assert notes[0]["delta"]["citation"]["cited_text"].startswith("Tides Brest")
    assert events[-2]["usage"]["server_tool_use"] == {"web_search_requests": 1}


# ---------------------------------------------------------------- Gemini


def _grounded(text: str, part_index: int | None = None) -> Json:
    segment: Json = {"startIndex": 0, "endIndex": len(ANSWER[: SPAN[1]].encode()), "text": ANSWER[: SPAN[1]]}
    if part_index is not None:
        segment["partIndex"] = part_index
    return {
        "webSearchQueries": ["tides brest"],
        "groundingChunks": [{"web": {"uri": PAGE, "title": "Brest tides"}}, {"retrievedContext": {}}],
        "groundingSupports": [{"segment": segment, "groundingChunkIndices": [0, 1]}],
        "searchEntryPoint": {"renderedContent": "<div></div>"},
    }


def test_gemini_upstream_grounding_counts_bytes_per_part() -> None:
    assert openai_to_gemini_request({**ASK, "web_search_options": {}})["tools"] == [{"googleSearch": {}}]
    parts = [{"text": "thinking", "thought": True}, {"text": ANSWER}]
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "groundingMetadata": _grounded(ANSWER, part_index=1)}]}  # fmt: skip
    _check_canonical(gemini_to_openai_response(body, "m")["choices"][0]["message"])


def test_gemini_upstream_grounding_in_a_stream() -> None:
    events = [
        {"candidates": [{"content": {"parts": [{"text": ANSWER[:12]}]}, "index": 0}]},
        {"candidates": [{"content": {"parts": [{"text": ANSWER[12:]}]}, "index": 0, "finishReason": "STOP",
                         "groundingMetadata": _grounded(ANSWER)}]},
    ]  # fmt: skip
    data = b"".join(b"data: " + orjson.dumps(e) + b"\r\n\r\n" for e in events)
    _check_canonical(_merged(json_events(feed_in_pieces(GeminiToOpenAIStream("m", True), data, 5))))


def test_gemini_client_search_tool_and_grounding_back() -> None:
    payload = {
        "contents": [{"parts": [{"text": "x"}]}],
        "tools": [{"google_search": {}}, {"code_execution": {}}],
    }
    dropped = Dropped()
    assert gemini_to_openai_request(payload, "m", dropped)["web_search_options"] == {}
    assert dropped.fields == ["tools.codeExecution"]
    for tools in ([{"teleport": {}}], [{"functionDeclarations": None}]):  # refused, as Google refuses them
        with pytest.raises(InvalidRequest):
            gemini_to_openai_request({**payload, "tools": tools}, "m", Dropped())
    answer = _canonical_answer()
    text = answer["choices"][0]["message"]["content"]
    meta = openai_to_gemini_response(answer, "m")["candidates"][0]["groundingMetadata"]
    assert meta["webSearchQueries"] == ["Tides in Brest?"] and len(meta["groundingChunks"]) == 2
    support = meta["groundingSupports"][0]
    raw = text.encode()
    assert (
        raw[support["segment"]["startIndex"] : support["segment"]["endIndex"]].decode()
        == support["segment"]["text"]
    )
    streamed = json_events(feed_in_pieces(OpenAIToGeminiStream("m"), _sandbox_chunks(), 5))
    assert streamed[-1]["candidates"][0]["groundingMetadata"]["groundingSupports"][0][
        "groundingChunkIndices"
    ] == [0]
