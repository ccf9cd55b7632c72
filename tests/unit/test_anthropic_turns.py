"""A coding agent's conversation, resent longer with each call, translated from the turns kept
of earlier calls (`Turns`): every call's canonical request and dropped fields are what a fresh
translation gives, a key's turns are its own, and the kept turns are not changed by the
translators that read the canonical request afterwards."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from unigate.errors import InvalidRequest
from unigate.recent_values import RecentValues
from unigate.translate.anthropic import TURNS_BYTES, Turns, openai_to_anthropic_request, translate_messages
from unigate.translate.gemini_request import openai_to_gemini_request
from unigate.translate.known_turns import MIN_TURNS

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PROTOCOLS = ("openai", "anthropic", "gemini", "sandbox")

# Every kind of turn the translator reads, and some it drops (a thinking block, a server tool's
# call, a Files API image): a turn's drops must come back with it when it is found again.
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Environment: linux"},
    {"role": "user", "content": [{"type": "text", "text": "Fix the failing test.", "cache_control": {}}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Read it first.", "signature": "sig"},
            {"type": "text", "text": "Reading the test."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "t.py", "limit": 200}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "def t(): ..."}],
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srv_1", "name": "code_execution", "input": {"code": "1"}},
            {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"cmd": "pytest", "retry": True}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "1 failed", "is_error": True},
            {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "before"},
            {"type": "mid_conv_system", "content": "Deferred tools: Bash"},
            {"type": "text", "text": "after"},
        ],
    },
    {"role": "assistant", "content": "Fixed it."},
    {"role": "user", "content": "Run it again."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": {"cmd": "pytest -x"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "passed"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "All green."}]},
]
TOOLS = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}]


def _call(messages: list[dict[str, Any]]) -> dict[str, Any]:
    # A fresh parse per call, as the gateway has: nothing is shared with the last call's body.
    parsed: dict[str, Any] = orjson.loads(
        orjson.dumps({"model": "m", "max_tokens": 100, "tools": TOOLS, "messages": messages})
    )
    return parsed


def _same(payload: dict[str, Any], turns: Turns, scope: str = "key_a") -> None:
    kept = translate_messages(payload, turns, scope)
    fresh = translate_messages(copy.deepcopy(payload))
    assert orjson.dumps(kept.canonical) == orjson.dumps(fresh.canonical)
    for protocol in PROTOCOLS:
        assert kept.dropped_for(protocol) == fresh.dropped_for(protocol)


def test_an_agents_calls_translate_as_fresh_ones() -> None:
    turns = Turns(TURNS_BYTES)
    for length in range(MIN_TURNS, len(CONVERSATION) + 1):  # each call resends it, one turn longer
        _same(_call(CONVERSATION[:length]), turns)
        _same(_call(CONVERSATION[:length]), turns)  # a retry: every turn known
    assert turns.held[0] == len(CONVERSATION)  # each turn translated once
    # The drops of turns found again are named too: the thinking block alone names nothing.
    found = translate_messages(_call(CONVERSATION), turns, "key_a")
    assert found.dropped_for("openai") == [
        "messages.content.image.source.file",
        "messages.content.server_tool_use",
    ]


def test_short_conversations_are_not_kept() -> None:
    turns = Turns(TURNS_BYTES)
    _same(_call(CONVERSATION[: MIN_TURNS - 1]), turns)
    assert turns.held == (0, 0)


@pytest.mark.parametrize("given", [1, 1.0, True])
def test_values_python_calls_equal_translate_apart(given: Any) -> None:
    """`1`, `1.0` and `true` are equal in Python and differ in the tool call's arguments."""
    turns = Turns(TURNS_BYTES)
    for value in (1, 1.0, True):  # the other two first: kept, and not to be found for `given`
        if value is not given:
            translate_messages(_call(_with_flag(value)), turns, "key_a")
    arguments = translate_messages(_call(_with_flag(given)), turns, "key_a").canonical["messages"][-1]
    assert arguments["tool_calls"][0]["function"]["arguments"] == orjson.dumps({"flag": given}).decode()


def _with_flag(value: Any) -> list[dict[str, Any]]:
    call = {"type": "tool_use", "id": "toolu_9", "name": "Set", "input": {"flag": value}}
    return [*CONVERSATION, {"role": "assistant", "content": [call]}]


def test_a_keys_turns_are_its_own() -> None:
    turns = Turns(TURNS_BYTES)
    translate_messages(_call(CONVERSATION), turns, "key_a")
    held = turns.held[0]
    _same(_call(CONVERSATION), turns, "key_b")
    assert turns.held[0] == 2 * held


def test_readers_of_the_canonical_request_leave_the_kept_turns_as_they_were() -> None:
    """A known turn's chat messages are shared by every call that resends it: the translators
    to the upstreams' formats read them, never change them."""
    turns = Turns(TURNS_BYTES)
    canonical = translate_messages(_call(CONVERSATION), turns, "key_a").canonical
    before = orjson.dumps(canonical)
    openai_to_anthropic_request(canonical, "claude-x")
    openai_to_gemini_request(canonical)
    assert orjson.dumps(canonical) == before
    _same(_call(CONVERSATION), turns)


def test_a_malformed_turn_is_refused_as_without_them() -> None:
    turns = Turns(TURNS_BYTES)
    bad = [*CONVERSATION, {"role": "user", "content": [{"type": "text", "text": 3}]}]
    with pytest.raises(InvalidRequest) as kept:
        translate_messages(_call(bad), turns, "key_a")
    with pytest.raises(InvalidRequest) as fresh:
        translate_messages(_call(bad))
    assert (kept.value.param, kept.value.message) == (fresh.value.param, fresh.value.message)
    assert kept.value.param == f"messages[{len(CONVERSATION)}].content[0].text"
    assert turns.held[0] == len(CONVERSATION)  # the turns before it were kept, not the bad one
    too_deep: Any = "x"
    for _ in range(300):  # past orjson's depth: translated without a key, and refused as ever
        too_deep = [too_deep]
    with pytest.raises(InvalidRequest):
        translate_messages(_call(CONVERSATION) | {"messages": [*CONVERSATION, too_deep]}, turns, "key_a")


def test_recent_values_keep_within_their_bound_the_oldest_going_first() -> None:
    kept = RecentValues[str, int](10)
    kept.put("aaaa", 1, "aaaa")
    kept.put("bbbb", 2, "bbbb")
    kept.put("cc", 3, "cc")
    assert kept.held == (3, 10)
    kept.put("dddd", 4, "dddd")  # the oldest goes to make room
    assert [kept.get(k) for k in ("aaaa", "bbbb", "cc", "dddd")] == [None, 2, 3, 4]
    kept.put("x" * 11, 5, "x" * 11)  # heavier than the bound: not kept, nothing dropped for it
    kept.put("bbbb", 9, "bbbb")  # a kept key keeps its value
    assert kept.held == (3, 10) and kept.get("x" * 11) is None and kept.get("bbbb") == 2
