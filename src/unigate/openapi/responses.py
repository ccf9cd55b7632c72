"""The OpenAI Responses API (`api/openai/responses.py`): create on any upstream, and the stored
responses' retrieve (a background one's events replayed), delete, cancel and input items.

The request body is generated from its declaration (`shapes/responses.py`), which the request is
checked with; every other field of OpenAI's API is relayed to a native upstream or, on a
translated route, listed in `x-unigate-dropped-fields`."""

from __future__ import annotations

from unigate.openapi.schema import (
    JSON,
    SSE,
    Operation,
    Schema,
    array,
    const,
    declared_json,
    deleted,
    dropped_fields,
    enum,
    integer,
    json_response,
    json_text,
    nullable_type,
    number,
    obj,
    query,
    ref,
    response,
    sse_event,
    string,
)
from unigate.shapes.responses import RESPONSE

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


def schemas() -> dict[str, Schema]:
    return {
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
                "error": nullable_type("object"),
                "incomplete_details": nullable_type("object"),
                "previous_response_id": nullable_type("string"),
                "metadata": nullable_type("object"),
            },
            ["id", "object", "created_at", "status", "model", "output"],
        ),
        "ResponseDeleted": deleted("response.deleted"),
        "ResponseInputItemList": obj(
            {
                "object": const("list"),
                "data": array(obj({"type": string()}, ["type"])),
                "first_id": nullable_type("string"),
                "last_id": nullable_type("string"),
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
            declared_json(RESPONSE, {"model": "sandbox-chat", "input": "Hello there"}),
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
