"""The Responses API's create body (`POST /v1/responses`, `translate/responses_request.py`).

Declared: the fields the gateway itself reads or maps, with their types and bounds. The input
items, tools and `tool_choice` are declared as the objects they are (an item or tool with its
`type`); what each kind of item or tool must hold depends on its `type` and is checked where
each is translated (`translate/responses_items.py`, `responses_tools.py`), which a declaration of
the container cannot say. Every other field is relayed to a native upstream or, on a translated
route, named in `x-unigate-dropped-fields`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
METADATA_KEY, METADATA_VALUE = 64, 512


class ResponseInputItem(Body):
    type: Annotated[
        str | None,
        Meta(
            description="message (default), function_call, function_call_output, custom_tool_call, "
            "custom_tool_call_output, item_reference, reasoning, …"
        ),
    ] = None
    role: str | None = None


class ResponseTool(Body):
    type: Annotated[
        str,
        Meta(
            description="function, custom, namespace (function and custom tools under one name) and "
            "web_search work on every route; other hosted tools need a native route (elsewhere dropped "
            "and named, or refused with `hosted_tools: reject`)"
        ),
    ]
    name: str | None = None


class ResponseToolChoice(Body):
    type: str


class ResponseTextFormat(Body):
    type: Literal["text", "json_object", "json_schema"] | None = None
    name: Annotated[str | None, Meta(description="json_schema: the format's name (required).")] = None
    schema: Annotated[
        dict[str, Any] | None,
        Meta(
            description="json_schema: the JSON Schema (required).", extra={"expected": "a JSON Schema object"}
        ),
    ] = None
    strict: bool | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if self.type == "json_schema":
            if not self.name:
                raise InvalidRequest(
                    "'text.format.name' is required for json_schema.", param="text.format.name"
                )
            if self.schema is None:
                raise InvalidRequest(
                    "Invalid type for 'text.format.schema': expected a JSON Schema object.",
                    param="text.format.schema",
                    code="invalid_type",
                )


class ResponseText(Body):
    format: ResponseTextFormat | None = None
    verbosity: str | None = None


class ResponseReasoning(Body):
    effort: Literal[EFFORTS] | None = None  # type: ignore[valid-type]


class ResponseRequest(Body):
    """OpenAI's Responses request; `input` is required unless `previous_response_id`, `prompt` or
    `conversation` stands for it."""

    model: Annotated[str, Meta(min_length=1, description="A model id the key may use.")]
    input: Annotated[
        str | list[ResponseInputItem] | None,
        Meta(
            description="Text, or typed input items.",
            extra={"expected": "a string or an array of input items"},
        ),
    ] = None
    instructions: Annotated[str | None, Meta(description="A system message for this turn only.")] = None
    previous_response_id: Annotated[str | None, Meta(description="A stored response to continue.")] = None
    store: Annotated[bool | None, Meta(description="Keep the response (default true).")] = None
    stream: Annotated[bool | None, Meta(description="Answer as typed server-sent events.")] = None
    background: Annotated[
        bool | None,
        Meta(description="Answer `queued` at once and run it on the gateway; poll, stream, cancel it."),
    ] = None
    max_output_tokens: Annotated[int, Meta(ge=1)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    parallel_tool_calls: bool | None = None
    tools: list[ResponseTool] | None = None
    tool_choice: Literal["auto", "none", "required"] | ResponseToolChoice | None = None
    include: list[str] | None = None
    text: ResponseText | None = None
    reasoning: ResponseReasoning | None = None
    # The key and value bounds are stated as schema and checked in __post_init__, which can name
    # the offending key (msgspec's error for a dict value does not say which key it was).
    metadata: (
        Annotated[
            dict[str, Any],
            Meta(
                max_length=16,
                extra_json_schema={
                    "propertyNames": {"maxLength": METADATA_KEY},
                    "additionalProperties": {"type": "string", "maxLength": METADATA_VALUE},
                },
            ),
        ]
        | None
    ) = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    service_tier: str | None = None
    truncation: str | None = None
    stream_options: dict[str, Any] | None = None
    conversation: Annotated[Any, Meta(description="Needs an upstream with its own Responses API.")] = None
    prompt: Annotated[Any, Meta(description="Needs an upstream with its own Responses API.")] = None

    def __post_init__(self) -> None:
        for key, value in (self.metadata or {}).items():
            if len(key) > METADATA_KEY or not isinstance(value, str) or len(value) > METADATA_VALUE:
                raise InvalidRequest(
                    f"'metadata' keys are at most {METADATA_KEY} characters and values strings of at most "
                    f"{METADATA_VALUE}.",
                    param=f"metadata.{key[:METADATA_KEY]}",
                    code="invalid_value",
                )
        standing_in = self.previous_response_id or self.conversation is not None or self.prompt is not None
        if self.input is None and not standing_in:
            raise InvalidRequest(
                "Missing required parameter: 'input'.", param="input", code="missing_required_parameter"
            )


RESPONSE = Shape(ResponseRequest)
