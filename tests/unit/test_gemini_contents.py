"""Gemini CLI's conversation, resent longer with each call, translated from the contents kept of
earlier calls (`Contents`): every call's chat request is what a fresh translation gives, the
call ids a content issues or answers follow the calls open before it, and a key's contents are
its own."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from unigate.errors import InvalidRequest
from unigate.translate.gemini import gemini_to_openai_request
from unigate.translate.gemini_inbound import Contents
from unigate.translate.known_turns import MIN_TURNS, TURNS_BYTES


def _call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    return {"functionCall": call}


def _answer(name: str, output: str, call_id: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id:
        response["id"] = call_id
    return {"functionResponse": response}


# Calls with and without ids (ids `call_<n>` are made for those without, in order), parallel
# calls answered by name, a thought left out, an image.
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "Fix the failing test."}]},
    {"role": "model", "parts": [{"text": "Reading it.", "thought": True}, _call("read", {"path": "t.py"})]},
    {"role": "user", "parts": [_answer("read", "def t(): ...")]},
    {"role": "model", "parts": [_call("run", {"cmd": "pytest"}), _call("read", {"path": "u.py"})]},
    {"role": "user", "parts": [_answer("read", "def u(): ..."), _answer("run", "1 failed")]},
    {"role": "model", "parts": [_call("edit", {"path": "t.py"}, "given_1")]},
    {"role": "user", "parts": [_answer("edit", "ok", "given_1")]},
    {"role": "user", "parts": [{"text": "Look:"}, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}]},
    {"role": "model", "parts": [{"text": "Fixed."}]},
    {"role": "user", "parts": [{"text": "Run it again."}]},
    {"role": "model", "parts": [_call("run", {"cmd": "pytest -x"})]},
    {"role": "user", "parts": [_answer("run", "passed")]},
]


def _body(contents: list[dict[str, Any]]) -> dict[str, Any]:
    # A fresh parse per call, as the gateway has.
    body = {"systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]}, "contents": contents}
    parsed: dict[str, Any] = orjson.loads(orjson.dumps(body))
    return parsed


def _same(contents: list[dict[str, Any]], known: Contents, scope: str = "key_a") -> dict[str, Any]:
    kept = gemini_to_openai_request(_body(contents), "m", None, known, scope)
    fresh = gemini_to_openai_request(_body(contents), "m")
    assert orjson.dumps(kept) == orjson.dumps(fresh)
    return kept


def test_a_growing_conversation_translates_as_fresh() -> None:
    known = Contents(TURNS_BYTES)
    for length in range(MIN_TURNS, len(CONVERSATION) + 1):
        _same(CONVERSATION[:length], known)
        _same(CONVERSATION[:length], known)
    assert known.held[0] == len(CONVERSATION)  # each content translated once
    ids = [m["tool_call_id"] for m in _same(CONVERSATION, known)["messages"] if m["role"] == "tool"]
    assert ids == ["call_0", "call_2", "call_1", "given_1", "call_4"]


def test_the_same_content_after_other_calls_answers_those() -> None:
    """An answer without an id answers the call open before it: the same content JSON after
    another conversation's calls is translated again, not taken from the first."""
    known = Contents(TURNS_BYTES)
    _same(CONVERSATION, known)
    shifted = [CONVERSATION[0], CONVERSATION[1], CONVERSATION[2], *CONVERSATION[9:], *CONVERSATION[3:9]]
    chat = _same(shifted, known)
    assert [m["tool_call_id"] for m in chat["messages"] if m["role"] == "tool"] == [
        "call_0",
        "call_1",
        "call_3",
        "call_2",
        "given_1",
    ]


def test_short_conversations_and_other_keys() -> None:
    known = Contents(TURNS_BYTES)
    _same(CONVERSATION[: MIN_TURNS - 1], known)
    assert known.held == (0, 0)
    _same(CONVERSATION, known, "key_a")
    held = known.held[0]
    _same(CONVERSATION, known, "key_b")
    assert known.held[0] == 2 * held


@pytest.mark.parametrize("given", [1, 1.0, True])
def test_values_python_calls_equal_translate_apart(given: Any) -> None:
    known = Contents(TURNS_BYTES)
    for value in (1, 1.0, True):
        if value is not given:
            _same([*CONVERSATION, {"role": "model", "parts": [_call("set", {"flag": value})]}], known)
    chat = _same([*CONVERSATION, {"role": "model", "parts": [_call("set", {"flag": given})]}], known)
    arguments = chat["messages"][-1]["tool_calls"][0]["function"]["arguments"]
    assert arguments == orjson.dumps({"flag": given}).decode()


def test_a_malformed_content_is_refused_as_without_them() -> None:
    known = Contents(TURNS_BYTES)
    bad = [*CONVERSATION, {"role": "user", "parts": [_answer("nothing", "x")]}]
    with pytest.raises(InvalidRequest) as kept:
        gemini_to_openai_request(_body(bad), "m", None, known, "key_a")
    with pytest.raises(InvalidRequest) as fresh:
        gemini_to_openai_request(_body(bad), "m")
    assert kept.value.message == fresh.value.message
    assert known.held[0] == len(CONVERSATION)
