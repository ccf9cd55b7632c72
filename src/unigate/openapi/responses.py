"""The OpenAI Responses API (`api/openai/responses.py`): create on any upstream, and the stored
responses' retrieve (a background one's events replayed), delete, cancel and input items.

The request schema types the fields the gateway itself reads (a wrong one is a 400 before any
route is tried); every other field of OpenAI's API is relayed to a native upstream or, on a
translated route, listed in `x-unigate-dropped-fields`."""

from __future__ import annotations

from unigate.openapi.schema import (
    JSON,
    SSE,
    Operation,
    Schema,
    any_of,
    array,
    const,
    dropped_fields,
    enum,
    integer,
    json_body,
    json_response,
    json_text,
    number,
    obj,
    query,
    ref,
    required_text,
    response,
    sse_event,
    string,
)

TAG = "text"
_EVENTS = (
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.delta",
    "response.refusal.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.output_text.annotation.added",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
)


def _nullable(kind: str, **keywords: object) -> Schema:
    return {"type": [kind, "null"], **keywords}


def schemas() -> dict[str, Schema]:
    item = obj(
        {
            "type": string(
                "message (default), function_call, function_call_output, custom_tool_call, "
                "custom_tool_call_output, item_reference, reasoning, …"
            ),
            "role": string(),
        }
    )
    tool = obj(
        {
            "type": string(
                "function, custom, namespace (function and custom tools under one name) and web_search "
                "work on every route; other hosted tools need a native route (elsewhere dropped and named, "
                "or refused with `hosted_tools: reject`)"
            ),
            "name": string(),
        },
        ["type"],
    )
    return {
        "ResponseRequest": obj(
            {
                "model": required_text(description="A model id the key may use."),
                "input": any_of(string(), array(item), description="Text, or typed input items."),
                "instructions": _nullable("string", description="A system message for this turn only."),
                "previous_response_id": _nullable("string", description="A stored response to continue."),
                "store": _nullable("boolean", description="Keep the response (default true)."),
                "stream": _nullable("boolean", description="Answer as typed server-sent events."),
                "background": _nullable(
                    "boolean",
                    description="Answer `queued` at once and run it on the gateway; poll, stream, cancel it.",
                ),
                "max_output_tokens": _nullable("integer", minimum=1),
                "temperature": _nullable("number"),
                "top_p": _nullable("number"),
                "parallel_tool_calls": _nullable("boolean"),
                "tools": _nullable("array", items=tool),
                "include": _nullable("array", items=string()),
                "tool_choice": any_of(
                    enum("auto", "none", "required", None), obj({"type": string()}, ["type"])
                ),
                "text": obj({"format": ref("ResponseTextFormat")}, nullable=True),
                "reasoning": obj(
                    {
                        "effort": _nullable(
                            "string", enum=["none", "minimal", "low", "medium", "high", "xhigh", None]
                        )
                    },
                    nullable=True,
                ),
                "metadata": _nullable(
                    "object",
                    maxProperties=16,
                    propertyNames={"maxLength": 64},
                    additionalProperties={"type": "string", "maxLength": 512},
                ),
                "user": _nullable("string"),
            },
            ["model"],
            "OpenAI's Responses request; `input` is required unless `previous_response_id`, `prompt` or "
            "`conversation` stands for it.",
        ),
        "ResponseTextFormat": obj(
            {
                "type": enum("text", "json_object", "json_schema", None),
                "name": _nullable("string", description="json_schema: the format's name (required)."),
                "schema": _nullable("object", description="json_schema: the JSON Schema (required)."),
            },
            nullable=True,
        ),
        "Response": obj(
            {
                "id": string(),
                "object": const("response"),
                "created_at": number(),
                "status": enum("queued", "in_progress", "completed", "incomplete", "failed", "cancelled"),
                "model": string(),
                "output": array(obj({"type": string()}, ["type"])),
                "usage": obj(
                    {"input_tokens": integer(0), "output_tokens": integer(0), "total_tokens": integer(0)},
                    nullable=True,
                ),
                "error": _nullable("object"),
                "incomplete_details": _nullable("object"),
                "previous_response_id": _nullable("string"),
                "metadata": _nullable("object"),
            },
            ["id", "object", "created_at", "status", "model", "output"],
        ),
        "ResponseDeleted": obj(
            {"id": string(), "object": const("response.deleted"), "deleted": const(True)},
            ["id", "object", "deleted"],
        ),
        "ResponseInputItemList": obj(
            {
                "object": const("list"),
                "data": array(obj({"type": string()}, ["type"])),
                "first_id": _nullable("string"),
                "last_id": _nullable("string"),
                "has_more": {"type": "boolean"},
            },
            ["object", "data", "has_more"],
        ),
    }


def _event() -> Schema:
    data = obj({"type": enum(*_EVENTS), "sequence_number": integer(0)}, ["type", "sequence_number"])
    return sse_event(
        json_text(data),
        "One typed event, numbered by `sequence_number` (`: keep-alive` comments in long silences); no "
        "`[DONE]`. An upstream that breaks mid-stream ends it with `response.failed` and `error`.",
        enum(*_EVENTS),
    )


def operations() -> list[Operation]:
    create_ok = response(
        "The response, or with `stream: true` its typed events.",
        {JSON: ref("Response"), SSE: _event()},
        dropped_fields(),
    )
    return [
        Operation(
            "POST",
            "/v1/responses",
            "createResponse",
            "Response (OpenAI Responses API)",
            TAG,
            {"200": create_ok},
            json_body(ref("ResponseRequest"), {"model": "sandbox-chat", "input": "Hello there"}),
            description="Any upstream protocol: relayed to an upstream with its own Responses API "
            "(`responses: native`), translated through chat completions for any other.",
        ),
        Operation(
            "GET",
            "/v1/responses/{response_id}",
            "getResponse",
            "A stored response",
            TAG,
            {
                "200": response(
                    "The stored response, or a background one's events.",
                    {JSON: ref("Response"), SSE: _event()},
                )
            },
            parameters=(
                query(
                    "stream",
                    enum("true", "false"),
                    "Background responses: replay the events, following it while it runs.",
                ),
                query(
                    "starting_after",
                    integer(-1, 999_999_999),
                    "Replay the events after this sequence number.",
                ),
            ),
        ),
        Operation(
            "POST",
            "/v1/responses/{response_id}/cancel",
            "cancelResponse",
            "Cancel a background response",
            TAG,
            {
                "200": json_response(
                    "The response, `cancelled` (or as it ended, if it already had).", ref("Response")
                )
            },
        ),
        Operation(
            "DELETE",
            "/v1/responses/{response_id}",
            "deleteResponse",
            "Delete a stored response",
            TAG,
            {"200": json_response("Deleted.", ref("ResponseDeleted"))},
        ),
        Operation(
            "GET",
            "/v1/responses/{response_id}/input_items",
            "listResponseInputItems",
            "A stored response's input items",
            TAG,
            {"200": json_response("A page of input items.", ref("ResponseInputItemList"))},
            parameters=(
                query("order", enum("asc", "desc"), "desc (default): newest first."),
                query("limit", integer(1, 100), "Page size (default 20)."),
                query("after", string(), "The page after this item id."),
            ),
        ),
    ]
