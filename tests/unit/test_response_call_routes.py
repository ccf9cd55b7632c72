"""How one `POST /v1/responses` call reaches its routes (`ResponseCall.route`): an upstream with
its own Responses API gets the request without it being translated, a chat route gets the chat
request translated once for all such routes, a request only a native route can take skips
every chat route; and what the call is admitted by (`text_call`) counts the stored
conversation it continues. Input items get distinct ids of OpenAI's form."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from typing import Any, cast

import orjson
import pytest

from unigate.api.openai.responses_call import NATIVE_FORMAT, ResponseCall
from unigate.errors import InvalidRequest
from unigate.providers.base import Reply, Target, TextCall, Timeouts, Unsupported
from unigate.providers.openai.text_relay import upstream_body
from unigate.responses.store import ResponseStore, StoredResponse
from unigate.translate.responses_items import normalize_input
from unigate.translate.responses_request import parse_request

TIMEOUTS = Timeouts(connect=1.0, read=1.0, total=1.0)


class _Chat:
    """A chat-only adapter that keeps the chat calls it is given."""

    native_formats: frozenset[str] = frozenset()
    name = "chat"

    def __init__(self) -> None:
        self.calls: list[TextCall] = []

    async def chat(self, call: TextCall, target: Target) -> Reply:
        self.calls.append(call)
        return Reply()


class _Native(_Chat):
    """An adapter with its own Responses API (not OpenAI's class: its generic `native` hook)."""

    native_formats = frozenset({NATIVE_FORMAT})
    name = "native"

    def __init__(self) -> None:
        super().__init__()
        self.payloads: list[dict[str, Any]] = []

    async def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: Any = None
    ) -> Reply:
        self.payloads.append(payload)
        return Reply(wire=NATIVE_FORMAT)


def _call(payload: dict[str, Any], chain: list[StoredResponse] | None = None) -> ResponseCall:
    store = cast(ResponseStore, None)  # routing reads no store
    return ResponseCall(store, parse_request(payload), "key_a", chain or [])


def _route(call: ResponseCall, provider: _Chat) -> Awaitable[Reply]:
    return call.route(Target(cast(Any, provider), "up-model", TIMEOUTS, f"{provider.name}/up-model"))


def test_a_native_route_gets_the_request_untranslated() -> None:
    call = _call({"model": "m", "input": [{"role": "user", "content": "hi"}], "store": False})
    native = _Native()
    asyncio.run(cast(Any, _route(call, native)))
    assert native.payloads == [call.request.payload] and native.calls == []
    assert call.chat is None  # the chat request was never made


def test_chat_routes_share_one_translation() -> None:
    call = _call({"model": "m", "input": "hi", "instructions": "Be brief.", "store": False})
    first, second = _Chat(), _Chat()
    asyncio.run(cast(Any, _route(call, first)))
    asyncio.run(cast(Any, _route(call, second)))
    assert first.calls[0] is second.calls[0]
    chat = first.calls[0]
    assert chat.body == b""  # the adapter serialises it, with its upstream's model
    assert chat.payload["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


def test_what_only_a_native_route_takes_skips_every_chat_route() -> None:
    call = _call({"model": "m", "input": "hi", "conversation": "conv_1", "store": False})
    for _ in range(2):
        with pytest.raises(Unsupported, match="conversation"):
            _route(call, _Chat())
    native = _Native()
    asyncio.run(cast(Any, _route(call, native)))
    assert native.payloads == [call.request.payload]


def test_admission_counts_the_stored_conversation() -> None:
    alone = _call({"model": "m", "input": "next", "store": False})
    assert alone.text_call().payload is alone.request.payload
    earlier = StoredResponse(
        id="resp_1",
        key_id="key_a",
        model="m",
        provider="chat",
        native=False,
        status="completed",
        previous_id=None,
        body={
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}
            ]
        },
        input=normalize_input("first"),
    )
    continued = _call({"model": "m", "input": "next", "previous_response_id": "resp_1"}, [earlier])
    admitted = continued.text_call()
    assert admitted.payload["input"] == [*earlier.input, *earlier.output, *continued.request.input_items]
    assert admitted.payload["previous_response_id"] == "resp_1" and admitted.model == "m"


def test_input_items_get_distinct_ids_of_openais_form() -> None:
    items = normalize_input(
        [
            {"role": "user", "content": "a"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": "y"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "z"},
            {"role": "assistant", "content": "b", "id": "msg_given"},
        ]
        * 50
    )
    ids = [item["id"] for item in items]
    assert len(set(ids)) == len(ids) - 49  # the given id is kept, fifty times
    pattern = re.compile(r"(msg|fc|fco|ctc|ctco)_[0-9a-f]{48}")
    assert all(pattern.fullmatch(i) for i in ids if i != "msg_given")
    assert [i.split("_")[0] for i in ids[:6]] == ["msg", "fc", "fco", "ctc", "ctco", "msg"]
    assert normalize_input("one")[0]["id"].startswith("msg_")


def test_a_gateway_made_request_is_serialised_by_the_adapter() -> None:
    """A translated request has no client bytes: the chat adapter serialises it once, with
    its upstream's model; a client's own bytes still go as they are when nothing changes."""
    made = TextCall("chat", b"", {"model": "m", "messages": []}, "m")
    assert orjson.loads(upstream_body(made, "m", False)) == {"model": "m", "messages": []}
    assert orjson.loads(upstream_body(made, "up", False)) == {"model": "up", "messages": []}
    client = TextCall("chat", b'{"model": "m",  "messages": []}', {"model": "m", "messages": []}, "m")
    assert upstream_body(client, "m", False) is client.body


def test_an_unstored_requests_items_are_typed_only_for_a_chat_route() -> None:
    """A native route takes the client's input as it is (its upstream judges it); a chat route
    needs it typed, and refuses a malformed item as a stored request is refused at once."""
    given = [{"role": "user", "content": "hi"}, {"type": "function_call", "name": "f", "arguments": "{}"}]
    call = _call({"model": "m", "input": given, "store": False})
    native = _Native()
    asyncio.run(cast(Any, _route(call, native)))
    assert native.payloads[0]["input"] == given and call.request.items is None
    with pytest.raises(InvalidRequest) as translated:
        _route(call, _Chat())
    assert translated.value.param == "input[1].call_id"
    with pytest.raises(InvalidRequest) as stored:
        parse_request({"model": "m", "input": given})
    assert stored.value.param == "input[1].call_id"
