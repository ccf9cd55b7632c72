"""The text family in Anthropic's Messages format (`api/anthropic/messages.py`): `POST /v1/messages`
(translated to any upstream, relayed untouched to an Anthropic one), token counts, and the
model list's Anthropic shape (`api/anthropic/models.py`; the operations are
`/v1/models`'s, in text.py, which answers each SDK in its own shape)."""

from __future__ import annotations

from typing import Any

from unigate.openapi.schema import (
    JSON,
    SSE,
    Operation,
    Schema,
    array,
    const,
    declared_json,
    dropped_fields,
    integer,
    json_response,
    json_text,
    obj,
    ref,
    response,
    response_header,
    sse_event,
    string,
)
from unigate.shapes.anthropic import COUNT_TOKENS, MESSAGES

TAG = "text"


def _messages() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Hello there"}]


def schemas() -> dict[str, Schema]:
    block = obj({"type": string("text, image, document, tool_use, tool_result, …")}, ["type"])
    return {
        "AnthropicModel": obj(
            {
                "type": const("model"),
                "id": string(),
                "display_name": string(),
                "created_at": string(format="date-time"),
            },
            ["type", "id", "display_name", "created_at"],
        ),
        "AnthropicModelList": obj(
            {
                "data": array(ref("AnthropicModel")),
                "has_more": {"type": "boolean"},
                "first_id": {"type": ["string", "null"]},
                "last_id": {"type": ["string", "null"]},
            },
            ["data", "has_more", "first_id", "last_id"],
        ),
        "AnthropicMessage": obj(
            {
                "id": string(),
                "type": const("message"),
                "role": const("assistant"),
                "model": string(),
                "content": array(block),
                "stop_reason": {"type": ["string", "null"]},
                "stop_sequence": {"type": ["string", "null"]},
                "usage": obj(
                    {"input_tokens": integer(0), "output_tokens": integer(0)},
                    ["input_tokens", "output_tokens"],
                ),
            },
            ["id", "type", "role", "model", "content", "stop_reason", "usage"],
        ),
    }


def _event() -> Schema:
    names = (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    )
    return sse_event(
        json_text(obj({"type": {"enum": list(names)}}, ["type"])),
        "One named event; its data's `type` is the event's name.",
        {"enum": list(names)},
    )


def token_count_header() -> Schema:
    return response_header(
        "`upstream`: the upstream's own count; `estimated`: the gateway's local count (exact for the "
        "sandbox).",
        {"enum": ["upstream", "estimated"]},
        required=True,
    )


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/v1/messages",
            "createMessage",
            "Message (Anthropic format)",
            TAG,
            {
                "200": response(
                    "The message, or with `stream: true` Anthropic's named events (`event: message_start` … "
                    "`event: message_stop`; `ping` keep-alives; an `error` event if the upstream breaks).",
                    {JSON: ref("AnthropicMessage"), SSE: _event()},
                    dropped_fields(),
                )
            },
            declared_json(MESSAGES, {"model": "sandbox-chat", "max_tokens": 200, "messages": _messages()}),
            description="Any upstream protocol: an `anthropic` upstream gets the client's body bytes (only "
            "the model id mapped), query and `anthropic-beta` / `anthropic-version` headers, and"
            " its answer is relayed as is; any other route gets the request translated through "
            "the OpenAI form and the answer back.",
        ),
        Operation(
            "POST",
            "/v1/messages/count_tokens",
            "countMessageTokens",
            "Count a message's input tokens",
            TAG,
            {
                "200": json_response(
                    "The count (an Anthropic upstream's own answer is relayed as it is).",
                    obj({"input_tokens": integer(0)}, ["input_tokens"]),
                    {"x-unigate-token-count": token_count_header()},
                )
            },
            declared_json(COUNT_TOKENS, {"model": "sandbox-chat", "messages": _messages()}),
            description="Asked of the model's upstream when it counts (an `anthropic` upstream's "
            "`count_tokens`, a `gemini` upstream's `countTokens`), else the gateway's local "
            "count: exact for the sandbox (it equals the call's `usage.input_tokens`), an "
            "approximation for other upstreams. The model is checked; nothing is routed through "
            "limits or charged.",
        ),
    ]
