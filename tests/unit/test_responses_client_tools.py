"""What Codex and agent frameworks send to the Responses API, on a translated route:
namespace and custom tools, hosted tools, replayed reasoning and item references, `include`,
and hosted web search coming back as a `web_search_call` with cited text."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from unigate.translate.responses_items import Untranslatable
from unigate.translate.responses_request import parse_request
from unigate.translate.responses_response import ResponseFrame, chat_to_response
from unigate.translate.responses_stream import ChatToResponsesStream
from unigate.translate.sse import SSEParser

SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Run a command",
    "strict": False,
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
}
CRM = {
    "type": "namespace",
    "name": "crm",
    "description": "Customer records.",
    "tools": [
        {"type": "function", "name": "lookup", "description": "Find a customer",
         "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}},
        {"type": "custom", "name": "note"},
    ],
}  # fmt: skip
# What `codex exec` sends on its first turn with a custom provider (wire_api = "responses").
CODEX: dict[str, Any] = {
    "model": "m",
    "instructions": "You are Codex.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}],
    "tools": [SHELL, PATCH, CRM, {"type": "web_search"}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "thread-1",
    "text": {"verbosity": "low"},
}


def test_codex_request_translates_with_every_unhonoured_field_named() -> None:
    req = parse_request(CODEX)
    chat = req.canonical([])
    names = [t["function"]["name"] for t in chat["tools"]]
    assert names == ["shell", "apply_patch", "crm__lookup", "crm__note"]
    patch = chat["tools"][1]["function"]
    assert patch["parameters"]["required"] == ["input"] and "start: /.+/" in patch["description"]
    assert chat["tools"][2]["function"]["description"] == "Customer records.\n\nFind a customer"
    assert chat["web_search_options"] == {}
    assert chat["tool_choice"] == "auto" and chat["parallel_tool_calls"] is False
    assert req.blocked is None and not req.store and not req.dropped.hosted
    assert req.dropped_for("openai") == ["include.reasoning.encrypted_content", "reasoning.summary"]
    assert req.dropped_for("anthropic") == [
        "include.reasoning.encrypted_content",
        "prompt_cache_key",
        "reasoning",
        "reasoning.summary",
        "text.verbosity",
    ]


def test_namespace_names_cannot_collide() -> None:
    taken = {"type": "function", "name": "crm__lookup", "parameters": {"type": "object"}}
    long = {
        "type": "namespace",
        "name": "n" * 70,
        "description": "",
        "tools": [{"type": "function", "name": "go"}],
    }
    dotted = {
        "type": "namespace",
        "name": "mcp.server",
        "description": "",
        "tools": [{"type": "function", "name": "go"}],
    }
    req = parse_request({"model": "m", "input": "x", "tools": [CRM, taken, long, dotted]})
    names = [t["function"]["name"] for t in req.canonical([])["tools"]]
    assert len(set(names)) == len(names) == 5 and names[2] == "crm__lookup"  # the plain one keeps its name
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)
    assert names[0].startswith("crm__lookup_") and names[4].startswith("mcp_server__go_")
    assert req.names.ref(names[0]).namespace == "crm" and req.names.ref(names[3]).name == "go"


def _answer(*calls: tuple[str, str], content: str | None = None, **message: Any) -> dict[str, Any]:
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    msg = {"role": "assistant", "content": content, **message}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {"choices": [{"message": msg, "finish_reason": "tool_calls" if calls else "stop"}]}


def test_calls_come_back_as_the_clients_tools() -> None:
    frame = ResponseFrame.for_request(parse_request(CODEX))
    body = _answer(("crm__lookup", '{"who":"Ada"}'), ("apply_patch", '{"input":"*** Begin Patch"}'),
                   ("crm__note", "not json"), ("shell", '{"command":"ls"}'))  # fmt: skip
    lookup, patch, note, shell = chat_to_response(body, frame)["output"]
    assert lookup["type"] == "function_call" and lookup["namespace"] == "crm" and lookup["name"] == "lookup"
    assert lookup["arguments"] == '{"who":"Ada"}' and lookup["call_id"] == "call_0"
    assert patch["type"] == "custom_tool_call" and patch["input"] == "*** Begin Patch"
    assert "namespace" not in patch and "arguments" not in patch
    assert note["namespace"] == "crm" and note["input"] == "not json"  # what the model wrote, kept
    assert shell["name"] == "shell" and "namespace" not in shell


def test_replayed_turn_maps_back_to_upstream_names() -> None:
    turn = {
        **CODEX,
        "input": [
            *CODEX["input"],
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "lookup",
                "namespace": "crm",
                "arguments": "{}",
            },
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
            {"type": "function_call_output", "call_id": "c1", "output": "Ada Lovelace"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"},
            {"type": "item_reference", "id": "msg_unknown"},
        ],
    }
    req = parse_request(turn)
    messages = req.canonical([])["messages"]
    assistant = messages[2]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["crm__lookup", "apply_patch"]
    assert orjson.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {"input": "*** Begin Patch"}
    assert messages[3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "Ada Lovelace"},
        {"role": "tool", "tool_call_id": "c2", "content": "Done!"},
    ]
    assert {"input.reasoning", "input.web_search_call", "input.item_reference"} <= set(
        req.dropped_for("openai")
    )
    assert [i["type"] for i in req.input_items][-1] == "item_reference"  # stored as sent


def test_item_reference_resolves_from_the_stored_conversation() -> None:
    history: list[dict[str, Any]] = [
        {"id": "msg_u", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"id": "fc_1", "type": "function_call", "call_id": "c9", "name": "shell", "arguments": "{}"},
    ]
    answer = {"type": "function_call_output", "call_id": "c9", "output": "ok"}
    req = parse_request({"model": "m", "input": [{"id": "fc_1"}, answer]})
    messages = req.canonical(history)["messages"]
    # The reference puts the stored item where it stands, after the conversation it belongs to.
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["c9", "c9"]
    assert req.dropped_for("openai") == []


def test_other_hosted_tools_are_dropped_and_recorded() -> None:
    payload = {
        "model": "m",
        "input": [
            {"type": "computer_call_output", "call_id": "c", "output": {}},
            {"role": "user", "content": "x"},
        ],
        "tools": [SHELL, {"type": "file_search", "vector_store_ids": ["vs"]}, {"type": "code_interpreter"}],
        "tool_choice": {"type": "file_search"},
    }
    req = parse_request(payload)
    chat = req.canonical([])
    assert [t["function"]["name"] for t in chat["tools"]] == ["shell"] and "tool_choice" not in chat
    assert [(t.name, t.param) for t in req.dropped.hosted] == [
        ("file_search", "tools[1]"),
        ("code_interpreter", "tools[2]"),
        ("computer_call_output", "input[0]"),
    ]
    assert req.dropped_for("gemini") == [
        "input.computer_call_output",
        "tool_choice",
        "tools.code_interpreter",
        "tools.file_search",
    ]
    with pytest.raises(Untranslatable, match="'conversation'"):
        parse_request({"model": "m", "input": "x", "conversation": "conv_1"}).canonical([])


def test_web_search_options_and_unhonoured_search_settings() -> None:
    tool = {
        "type": "web_search_preview",
        "search_context_size": "high",
        "user_location": {"type": "approximate", "city": "Paris", "country": "FR", "region": None},
        "search_content_types": ["text"],
    }
    req = parse_request(
        {"model": "m", "input": "x", "tools": [tool], "include": ["web_search_call.action.sources"]}
    )
    chat = req.canonical([])
    assert chat["web_search_options"] == {
        "search_context_size": "high",
        "user_location": {"type": "approximate", "approximate": {"city": "Paris", "country": "FR"}},
    }
    assert "tools" not in chat and req.sources
    assert req.dropped_for("openai") == ["tools.web_search_preview.search_content_types"]


SEARCHED = {
    "web_searches": [
        {"queries": ["tides Brest"], "sources": [{"type": "url", "url": "https://a.test/1", "title": "A"}]}
    ],
}
CITED = [
    {"type": "url_citation",
     "url_citation": {"url": "https://a.test/1", "title": "A", "start_index": 6, "end_index": 11}},
]  # fmt: skip


def test_web_search_answer_as_response_items() -> None:
    frame = ResponseFrame.for_request(
        parse_request({"model": "m", "input": "x", "tools": [{"type": "web_search"}],
                       "include": ["web_search_call.action.sources"]})
    )  # fmt: skip
    out = chat_to_response(_answer(content="Tides rise at 6.", annotations=CITED, **SEARCHED), frame)[
        "output"
    ]
    search, message = out
    assert search["type"] == "web_search_call" and search["status"] == "completed"
    assert search["action"] == {
        "type": "search",
        "query": "tides Brest",
        "queries": ["tides Brest"],
        "sources": [{"type": "url", "url": "https://a.test/1"}],
    }
    assert message["content"][0]["annotations"] == [
        {"type": "url_citation", "url": "https://a.test/1", "title": "A", "start_index": 6, "end_index": 11}
    ]
    # An OpenAI search model cites without saying what it searched: one search is implied.
    frame.sources = False
    implied = chat_to_response(_answer(content="Tides rise at 6.", annotations=CITED), frame)["output"][0]
    assert implied["action"] == {"type": "search", "query": ""}


def _stream(
    frame: ResponseFrame, *deltas: dict[str, Any]
) -> tuple[ChatToResponsesStream, list[dict[str, Any]]]:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    data = b""
    for delta in [{"role": "assistant", "content": ""}, *deltas]:
        data += b"data: " + orjson.dumps({**head, "choices": [{"index": 0, "delta": delta}]}) + b"\n\n"
    data += b"data: " + orjson.dumps(
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    data += b"\n\ndata: [DONE]\n\n"
    translator = ChatToResponsesStream(frame)
    out = b"".join(translator.feed(data[i : i + 7]) for i in range(0, len(data), 7)) + translator.finish()
    parser = SSEParser()
    return translator, [orjson.loads(body) for _, body in parser.feed(out) + parser.flush()]


def test_stream_restores_namespaces_and_custom_input() -> None:
    frame = ResponseFrame.for_request(parse_request(CODEX))
    lookup = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "crm__lookup", "arguments": ""},
    }
    patch = {"index": 1, "id": "c2", "type": "function", "function": {"name": "apply_patch", "arguments": ""}}
    translator, events = _stream(
        frame,
        {"tool_calls": [lookup]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"who":"Ada"}'}}]},
        {"tool_calls": [patch]},
        {"tool_calls": [{"index": 1, "function": {"arguments": '{"input":"*** Begin'}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": ' Patch"}'}}]},
    )
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert added[0]["namespace"] == "crm" and added[0]["name"] == "lookup"
    assert added[1]["type"] == "custom_tool_call" and added[1]["input"] == ""
    kinds = [e["type"] for e in events]
    assert kinds.count("response.function_call_arguments.delta") == 1  # the custom call's JSON is not sent
    done = next(e for e in events if e["type"] == "response.custom_tool_call_input.done")
    assert done["input"] == "*** Begin Patch" and done["output_index"] == 1
    args_done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert args_done["name"] == "lookup"
    final = translator.final()["output"]
    assert final[0]["namespace"] == "crm" and final[1]["input"] == "*** Begin Patch"


def test_stream_reports_the_search_and_its_citations() -> None:
    frame = ResponseFrame.for_request(
        parse_request({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})
    )
    translator, events = _stream(
        frame, SEARCHED, {"content": "Tides "}, {"content": "rise at 6."}, {"annotations": CITED}
    )
    kinds = [e["type"] for e in events]
    assert kinds[2:8] == [
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
        "response.output_item.added",
    ]
    assert events[2]["item"]["type"] == "web_search_call" and events[6]["item"]["status"] == "completed"
    note = next(e for e in events if e["type"] == "response.output_text.annotation.added")
    assert note["output_index"] == 1 and note["annotation_index"] == 0
    assert note["annotation"]["start_index"] == 6 and note["annotation"]["url"] == "https://a.test/1"
    final = translator.final()["output"]
    assert final[0]["action"]["query"] == "tides Brest"
    assert final[1]["content"][0]["annotations"] == [note["annotation"]]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_images_a_tool_returned_follow_the_results() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    items = [
        {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [image]},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "ok"}]},
        {"role": "user", "content": "What do you see?"},
    ]
    messages = parse_request({"model": "m", "input": items}).canonical([])["messages"]
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "user", "user"]
    assert messages[1]["content"] == "" and messages[2]["content"] == "ok"
    assert messages[3]["content"] == [{"type": "image_url", "image_url": {"url": image["image_url"]}}]
