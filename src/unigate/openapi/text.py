"""The text family in OpenAI's format (`api/openai/text.py`): chat completions, completions,
embeddings, and the model listing that the OpenAI, Anthropic and Gemini SDKs share at
`/v1/models` (`api/anthropic/models.py` picks the shape per request).

The request bodies are generated from their declarations (`shapes/text.py`), which the router
checks them with."""

from __future__ import annotations

from typing import Any

from unigate.openapi.edge import styles_schema
from unigate.openapi.schema import (
    JSON,
    SSE,
    Operation,
    Schema,
    any_of,
    array,
    const,
    declared_json,
    header,
    integer,
    json_response,
    json_text,
    number,
    obj,
    query,
    ref,
    response,
    sse_event,
    string,
)
from unigate.shapes.text import CHAT, COMPLETION, EMBEDDING

TAG = "text"


def _hello() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Hello there"}]


def _nullable_string() -> Schema:
    return {"type": ["string", "null"]}


def _usage() -> Schema:
    return obj(
        {"prompt_tokens": integer(0), "completion_tokens": integer(0), "total_tokens": integer(0)},
        ["prompt_tokens", "total_tokens"],
    )


def schemas() -> dict[str, Schema]:
    tool_call = obj(
        {
            "id": string(),
            "type": const("function"),
            "function": obj({"name": string(), "arguments": string("JSON text.")}, ["name", "arguments"]),
        },
        ["id", "type", "function"],
    )
    return {
        "ChatCompletion": obj(
            {
                "id": string(),
                "object": const("chat.completion"),
                "created": integer(),
                "model": string(),
                "system_fingerprint": _nullable_string(),
                "choices": array(
                    obj(
                        {
                            "index": integer(0),
                            "message": obj(
                                {
                                    "role": const("assistant"),
                                    "content": _nullable_string(),
                                    "refusal": _nullable_string(),
                                    "tool_calls": array(tool_call),
                                },
                                ["role"],
                            ),
                            "finish_reason": _nullable_string(),
                        },
                        ["index", "message", "finish_reason"],
                    )
                ),
                "usage": _usage(),
            },
            ["id", "object", "created", "model", "choices"],
        ),
        "ChatCompletionChunk": obj(
            {
                "id": string(),
                "object": const("chat.completion.chunk"),
                "created": integer(),
                "model": string(),
                "choices": array(
                    obj(
                        {"index": integer(0), "delta": obj({}), "finish_reason": _nullable_string()},
                        ["index", "delta"],
                    )
                ),
                "usage": any_of(_usage(), {"type": "null"}),
            },
            ["id", "object", "created", "model", "choices"],
            "With `stream_options.include_usage`, a last chunk with no choices carries `usage`.",
        ),
        "CompletionChunk": obj(
            {
                "id": string(),
                "object": const("text_completion"),
                "created": integer(),
                "model": string(),
                "choices": array(
                    obj(
                        {"index": integer(0), "text": string(), "finish_reason": _nullable_string()},
                        ["index", "text"],
                    )
                ),
                "usage": any_of(_usage(), {"type": "null"}),
            },
            ["id", "object", "created", "model", "choices"],
        ),
        "Completion": obj(
            {
                "id": string(),
                "object": const("text_completion"),
                "created": integer(),
                "model": string(),
                "choices": array(
                    obj(
                        {"index": integer(0), "text": string(), "finish_reason": _nullable_string()},
                        ["index", "text", "finish_reason"],
                    )
                ),
                "usage": _usage(),
            },
            ["id", "object", "created", "model", "choices"],
        ),
        "EmbeddingList": obj(
            {
                "object": const("list"),
                "data": array(
                    obj(
                        {
                            "object": const("embedding"),
                            "index": integer(0),
                            "embedding": any_of(array(number()), string("base64 float32")),
                        },
                        ["object", "index", "embedding"],
                    )
                ),
                "model": string(),
                "usage": obj({"prompt_tokens": integer(0), "total_tokens": integer(0)}),
            },
            ["object", "data", "model"],
        ),
        "OpenAIModel": obj(
            {"id": string(), "object": const("model"), "created": integer(), "owned_by": string()},
            ["id", "object", "created", "owned_by"],
        ),
        "OpenAIModelList": obj(
            {"object": const("list"), "data": array(ref("OpenAIModel"))}, ["object", "data"]
        ),
    }


def _shape_headers() -> tuple[Schema, ...]:
    return (
        header("anthropic-version", string(), "Present (as the Anthropic SDK sends it): Anthropic's shapes."),
    )


def _list_params() -> tuple[Schema, ...]:
    # Each shape reads its own paging parameters and the others ignore them, so none can be
    # constrained here without refusing a caller that sends another shape's.
    return (
        *_shape_headers(),
        query("limit", string(), "Anthropic shape: page size, 1 to 1000 (default 20)."),
        query("after_id", string(), "Anthropic shape: the page after this model id."),
        query("before_id", string(), "Anthropic shape: the page before this model id."),
        query("pageSize", string(), "Gemini shape: page size (default 50, at most 1000)."),
        query("pageToken", string(), "Gemini shape: `nextPageToken` of the previous page."),
    )


def _openai_event(chunk: str) -> Schema:
    """OpenAI's stream: `data: <chunk>` events, then `data: [DONE]`; an upstream that breaks
    mid-stream ends it with `data: {"error": …}` and no [DONE]."""
    return sse_event(
        any_of(const("[DONE]"), json_text(any_of(ref(chunk), ref("OpenAIError")))),
        "One event of the stream (`: keep-alive` comments are sent during long upstream silences).",
    )


def operations() -> list[Operation]:
    chat_ok = response(
        "The completion, or with `stream: true` its chunks as server-sent events "
        "(`data: {chat.completion.chunk}` … `data: [DONE]`).",
        {JSON: ref("ChatCompletion"), SSE: _openai_event("ChatCompletionChunk")},
    )
    completion_ok = response(
        "The completion, or with `stream: true` its chunks as server-sent events.",
        {JSON: ref("Completion"), SSE: _openai_event("CompletionChunk")},
    )
    shapes = styles_schema("openai", "anthropic", "gemini")
    return [
        Operation(
            "POST",
            "/v1/chat/completions",
            "createChatCompletion",
            "Chat completion (OpenAI format)",
            TAG,
            {"200": chat_ok},
            declared_json(CHAT, {"model": "sandbox-chat", "messages": _hello()}),
        ),
        Operation(
            "POST",
            "/v1/completions",
            "createCompletion",
            "Text completion (OpenAI format)",
            TAG,
            {"200": completion_ok},
            declared_json(COMPLETION, {"model": "sandbox-chat", "prompt": "Once upon a time"}),
        ),
        Operation(
            "POST",
            "/v1/embeddings",
            "createEmbedding",
            "Embeddings (OpenAI format)",
            TAG,
            {"200": json_response("The vectors.", ref("EmbeddingList"))},
            declared_json(EMBEDDING, {"model": "sandbox-embedding", "input": ["one", "two"]}),
        ),
        Operation(
            "GET",
            "/v1/models",
            "listModels",
            "Models the key may use",
            TAG,
            {
                "200": json_response(
                    "OpenAI's list; Anthropic's page with `anthropic-version`; Gemini's list for a key "
                    "sent as `x-goog-api-key` or `?key=`.",
                    any_of(ref("OpenAIModelList"), ref("AnthropicModelList"), ref("GeminiModelList")),
                )
            },
            parameters=_list_params(),
            error_schema=shapes,
            extra_auth=("apiKey", "googApiKey", "googKey"),
        ),
        Operation(
            "GET",
            "/v1/models/{model}",
            "getModel",
            "One model the key may use",
            TAG,
            {
                "200": json_response(
                    "The model in the caller's shape (as for the list).",
                    any_of(ref("OpenAIModel"), ref("AnthropicModel"), ref("GeminiModel")),
                )
            },
            parameters=_shape_headers(),
            path_examples={"model": "sandbox-chat"},
            error_schema=shapes,
            extra_auth=("apiKey", "googApiKey", "googKey"),
        ),
    ]
