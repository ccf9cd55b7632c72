"""The conformance checker itself (`tests/support/openai_conformance.py`): it finds what the
published description forbids, allows exactly its listed quirks and nothing near them, and
reads streams event by event, so a clean run of the conformance tests means something."""

from __future__ import annotations

from typing import Any

import orjson

from tests.support.openai_conformance import QUIRKS, spec, sse_events

Json = dict[str, Any]
USAGE = {
    "input_tokens": 3,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 2,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 5,
}


def _response(**changes: Any) -> Json:
    body = {
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "background": False,
        "error": None, "incomplete_details": None, "instructions": None, "max_output_tokens": None,
        "model": "m", "output": [], "parallel_tool_calls": True, "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None}, "service_tier": "default", "store": True,
        "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "top_p": 1.0, "truncation": "disabled", "usage": USAGE, "user": None, "metadata": {},
    }  # fmt: skip
    return {**body, **changes}


def _check(method: str, path: str, body: Any, content_type: str = "application/json") -> list[str]:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return [str(v) for v in spec().check_body(method, path, 200, content_type, raw)]


def _sse(*events: Json, named: bool = True) -> bytes:
    return b"".join(
        (f"event: {e['type']}\n".encode() if named else b"") + b"data: " + orjson.dumps(e) + b"\n\n"
        for e in events
    )


def test_a_conforming_response_passes_and_each_deviation_is_found() -> None:
    assert _check("POST", "/v1/responses", _response()) == []
    details = {"cached_tokens": 0}
    missing = _check("POST", "/v1/responses", _response(usage={**USAGE, "input_tokens_details": details}))
    assert missing and "cache_write_tokens" in missing[0]
    assert _check("GET", "/v1/responses/resp_1", _response(status="done"))
    assert _check("POST", "/v1/responses", _response(user=5))  # the quirk allows null, not anything


def test_quirks_allow_only_what_they_name() -> None:
    assert _check("POST", "/v1/responses", _response(usage=None)) == []
    assert _check("POST", "/v1/chat/completions", {"id": "x", "usage": None})  # not a Responses quirk
    vector = {"object": "embedding", "index": 0, "embedding": "AAAA"}
    body = {
        "object": "list",
        "model": "m",
        "data": [vector],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }
    assert _check("POST", "/v1/embeddings", body) == []
    body["data"][0]["embedding"] = {"not": "base64"}
    assert _check("POST", "/v1/embeddings", body)
    chunk = {"id": "c", "object": "text_completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "text": "x", "finish_reason": None, "logprobs": None}]}  # fmt: skip
    assert (
        _check("POST", "/v1/completions", b"data: " + orjson.dumps(chunk) + b"\n\n", "text/event-stream")
        == []
    )
    assert _check("POST", "/v1/completions", chunk)  # a whole completion has a finish_reason
    assert _check("POST", "/v1/audio/speech", b"ID3", "audio/mpeg") == []
    assert _check("POST", "/v1/chat/completions", b"{}", "text/plain")
    assert all(q.reason for q in QUIRKS)


def test_stream_events_are_checked_one_by_one() -> None:
    shell = _response(status="in_progress", usage=None)
    good = [
        {"type": "response.created", "sequence_number": 0, "response": shell},
        {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": "Hi", "logprobs": []},
        {"type": "response.completed", "sequence_number": 2, "response": _response()},
    ]  # fmt: skip
    assert _check("POST", "/v1/responses", _sse(*good), "text/event-stream") == []
    unnamed = _sse(*good, named=False)
    assert (
        len(sse_events(unnamed)) == 3 and _check("POST", "/v1/responses", unnamed, "text/event-stream") == []
    )
    no_delta = {k: v for k, v in good[1].items() if k != "delta"}
    found = _check("POST", "/v1/responses", _sse(good[0], no_delta), "text/event-stream")
    assert found == [
        'POST /responses event 1 (response.output_text.delta) at /: "delta" is a required property'
    ]
    misnamed = b"event: response.done\ndata: " + orjson.dumps(good[2]) + b"\n\n"
    assert _check("POST", "/v1/responses", misnamed, "text/event-stream")
    assert _check(
        "POST", "/v1/responses", _sse({"type": "response.bogus", "sequence_number": 0}), "text/event-stream"
    )
    assert _check("POST", "/v1/responses", b"", "text/event-stream")  # a stream needs events
