"""The text family in the Gemini API's format (`api/gemini/content.py`, `gemini_embed.py`,
`gemini_models.py`): generateContent and its stream, token counts, embeddings and the model
listing, under `/v1beta/models/…` and (google-genai's default version) `/v1/models/…`. Veo's
operations are in video_vendors.py."""

from __future__ import annotations

from typing import Any

from unigate.openapi.anthropic import token_count_header
from unigate.openapi.schema import (
    SSE,
    Operation,
    Schema,
    any_of,
    array,
    dropped_fields,
    integer,
    json_body,
    json_response,
    json_text,
    obj,
    query,
    ref,
    response,
    sse_event,
    string,
    text,
)

TAG = "gemini"
VERSIONS = ("v1beta", "v1")


def _embedding() -> dict[str, str]:
    return {"model": "sandbox-embedding"}


def _chat() -> dict[str, str]:
    return {"model": "sandbox-chat"}


def _hello() -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": "Hello there"}]}]}


def schemas() -> dict[str, Schema]:
    # One kind of part each; the other members are absent (or null).
    part = obj(
        {
            "text": text(),
            "inlineData": obj({"mimeType": string(), "data": string("base64")}, nullable=True),
            "fileData": obj({"mimeType": string(), "fileUri": string()}, nullable=True),
            "functionCall": obj(
                {"name": string(), "args": {"description": "The call's arguments object."}}, nullable=True
            ),
            "functionResponse": obj(
                {"name": string(), "response": {"description": "The function's result."}}, nullable=True
            ),
        },
        description="One part: text, inline data, a file, a function call or its response.",
    )
    content = obj(
        {
            "role": {"type": ["string", "null"], "description": "user (default), model, function or tool."},
            # null is the default (none), as Google's JSON mapping reads it and the translator does.
            "parts": {"type": ["array", "null"], "items": part},
        },
    )
    text_content = obj({"parts": array(obj({"text": string()}, ["text"]), minItems=1)}, ["parts"])
    embed_request = obj(
        {
            "content": text_content,
            "outputDimensionality": {"type": ["integer", "null"], "minimum": 1},
            "taskType": {"type": ["string", "null"]},
        },
        ["content"],
    )
    model = obj(
        {
            "name": string("models/{id}"),
            "baseModelId": string(),
            "version": string(),
            "displayName": string(),
            "description": string(),
            "supportedGenerationMethods": array(string()),
        },
        ["name", "displayName", "supportedGenerationMethods"],
    )
    return {
        "GeminiPart": part,
        "GeminiContent": content,
        "GenerateContentRequest": obj(
            {
                "contents": array(ref("GeminiContent"), minItems=1),
                "systemInstruction": any_of(
                    string(),
                    obj({"parts": {"type": ["array", "null"], "items": obj({"text": text()})}}),
                    {"type": "null"},
                    description="Text, or a content whose text parts are the system prompt.",
                ),
                "tools": {
                    "type": ["array", "null"],
                    "items": obj({"functionDeclarations": array(obj({"name": string()}, ["name"]))}),
                },
                "toolConfig": {"type": ["object", "null"]},
                "generationConfig": obj(
                    {
                        "temperature": {"type": ["number", "null"]},
                        "maxOutputTokens": {"type": ["integer", "null"], "minimum": 1},
                        "responseModalities": {
                            "type": ["array", "null"],
                            "items": string(),
                            "description": "With IMAGE: image output (needs the image family); with AUDIO "
                            "(or a speechConfig): speech (the audio family). A route to OpenAI's image or "
                            "speech API answers them through it.",
                        },
                    },
                    nullable=True,
                ),
            },
            ["contents"],
            "The Gemini API's generateContent request.",
        ),
        "GenerateContentResponse": obj(
            {
                "candidates": array(
                    obj(
                        {
                            "content": ref("GeminiContent"),
                            "finishReason": string(),
                            "index": integer(0),
                        },
                        ["content"],
                    )
                ),
                "usageMetadata": obj(
                    {
                        "promptTokenCount": integer(0),
                        "candidatesTokenCount": integer(0),
                        "totalTokenCount": integer(0),
                    }
                ),
                "modelVersion": string(),
                "responseId": string(),
            },
            ["candidates"],
        ),
        "CountTokensRequest": any_of(
            obj({"contents": array(ref("GeminiContent"), minItems=1)}, ["contents"]),
            obj({"generateContentRequest": ref("GenerateContentRequest")}, ["generateContentRequest"]),
            description="Bare `contents`, or a whole `generateContentRequest` (system instruction and tools "
            "counted too).",
        ),
        "EmbedContentRequest": embed_request,
        "BatchEmbedContentsRequest": obj({"requests": array(embed_request, minItems=1)}, ["requests"]),
        "GeminiEmbedding": obj({"values": array({"type": "number"})}, ["values"]),
        "GeminiModel": model,
        "GeminiModelList": obj({"models": array(ref("GeminiModel")), "nextPageToken": string()}, ["models"]),
    }


def _generate(version: str) -> list[Operation]:
    base = f"/{version}/models/{{model}}"
    suffix = "" if version == "v1beta" else "V1"
    return [
        Operation(
            "POST",
            base + ":generateContent",
            "generateContent" + suffix,
            f"Generate content (Gemini format, {version})",
            TAG,
            {
                "200": json_response(
                    "The candidates (image and audio output as `inlineData` parts).",
                    ref("GenerateContentResponse"),
                    dropped_fields(),
                )
            },
            json_body(ref("GenerateContentRequest"), _hello()),
            path_examples=_chat(),
        ),
        Operation(
            "POST",
            base + ":streamGenerateContent",
            "streamGenerateContent" + suffix,
            f"Stream content (Gemini format, {version})",
            TAG,
            {
                "200": response(
                    "`data:` events, each a GenerateContentResponse chunk.",
                    {
                        SSE: sse_event(
                            json_text(any_of(ref("GenerateContentResponse"), ref("GeminiError"))),
                            "One chunk; a broken upstream stream ends with an error chunk. Blank lines "
                            "are keep-alives.",
                        )
                    },
                    dropped_fields(),
                )
            },
            json_body(ref("GenerateContentRequest"), _hello()),
            path_examples=_chat(),
            parameters=(
                query("alt", string(), "sse, as google-genai sends it (the answer is SSE either way)."),
            ),
        ),
        Operation(
            "POST",
            base + ":countTokens",
            "countTokens" + suffix,
            f"Count a request's input tokens (Gemini format, {version})",
            TAG,
            {
                "200": json_response(
                    "The count (a Gemini upstream's own answer is relayed as it is).",
                    obj({"totalTokens": integer(0)}),
                    {"x-unigate-token-count": token_count_header()},
                )
            },
            json_body(ref("CountTokensRequest"), _hello()),
            path_examples=_chat(),
            description="Asked of the model's upstream when it counts (a `gemini` upstream's `countTokens`, "
            "an `anthropic` upstream's `count_tokens`), else the gateway's local count. Nothing "
            "is routed through limits or charged.",
        ),
        Operation(
            "POST",
            base + ":embedContent",
            "embedContent" + suffix,
            f"Embed one content (Gemini format, {version})",
            TAG,
            {"200": json_response("The vector.", obj({"embedding": ref("GeminiEmbedding")}, ["embedding"]))},
            json_body(ref("EmbedContentRequest"), {"content": {"parts": [{"text": "one"}]}}),
            path_examples=_embedding(),
            description="Routed as an OpenAI embeddings call to any upstream that embeds; text parts only.",
        ),
        Operation(
            "POST",
            base + ":batchEmbedContents",
            "batchEmbedContents" + suffix,
            f"Embed several contents (Gemini format, {version})",
            TAG,
            {
                "200": json_response(
                    "The vectors in request order.",
                    obj({"embeddings": array(ref("GeminiEmbedding"))}, ["embeddings"]),
                )
            },
            json_body(
                ref("BatchEmbedContentsRequest"),
                {
                    "requests": [
                        {"content": {"parts": [{"text": "one"}]}},
                        {"content": {"parts": [{"text": "two"}]}},
                    ]
                },
            ),
            path_examples=_embedding(),
        ),
    ]


def operations() -> list[Operation]:
    page = "A non-negative integer."
    return [
        *(op for version in VERSIONS for op in _generate(version)),
        Operation(
            "GET",
            "/v1beta/models",
            "listGeminiModels",
            "Models the key may use (Gemini format)",
            TAG,
            {"200": json_response("One page of models.", ref("GeminiModelList"))},
            parameters=(
                query("pageSize", integer(0, description=page + " 0: the default, 50; at most 1000.")),
                query("pageToken", integer(0, description="`nextPageToken` of the previous page.")),
            ),
        ),
        Operation(
            "GET",
            "/v1beta/models/{model}",
            "getGeminiModel",
            "One model the key may use (Gemini format)",
            TAG,
            {"200": json_response("The model.", ref("GeminiModel"))},
            path_examples=_chat(),
        ),
    ]
