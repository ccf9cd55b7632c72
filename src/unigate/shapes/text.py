"""The text family's request bodies in OpenAI's format (`api/openai/text.py`): chat
completions, completions, embeddings and moderations.

Each declares the fields the gateway itself reads or types (a wrong one is a 400 before any
route is tried); every other field of OpenAI's API is relayed to the upstream as sent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape

ModelId = Annotated[str, Meta(min_length=1, description="A model id the key may use (GET /v1/models).")]
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
Content = Annotated[
    str | list[Any] | None,
    Meta(description="Text or parts.", extra={"expected": "a string or an array of content parts"}),
]
Count = Annotated[int, Meta(ge=1)]
TextsOrTokens = Annotated[
    str | list[Any],
    Meta(description="Text, or an array of texts or tokens.", extra={"expected": "a string or an array"}),
]


class StreamOptions(Body):
    include_usage: Annotated[bool | None, Meta(description="true: a last chunk carries `usage`.")] = None


class ChatMessage(Body):
    role: Role
    content: Content = None


class ChatCompletionRequest(Body):
    """OpenAI's chat completion request; fields not listed are relayed to the upstream."""

    model: ModelId
    messages: Annotated[list[ChatMessage], Meta(min_length=1)]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: Count | None = None
    max_completion_tokens: Count | None = None
    n: Count | None = None
    temperature: float | None = None
    stop: str | list[str] | None = None
    response_format: dict[str, Any] | None = None
    stream: Annotated[bool | None, Meta(description="Answer as server-sent events.")] = None
    stream_options: StreamOptions | None = None


class CompletionRequest(Body):
    """OpenAI's (legacy) completion request; fields not listed are relayed to the upstream."""

    model: ModelId
    prompt: TextsOrTokens
    stream: Annotated[bool | None, Meta(description="Answer as server-sent events.")] = None
    stream_options: StreamOptions | None = None


class EmbeddingRequest(Body):
    model: ModelId
    input: TextsOrTokens
    encoding_format: Annotated[
        Literal["float", "base64"] | None, Meta(description="float (default) or base64.")
    ] = None
    dimensions: Annotated[Count | None, Meta(description="Vector length.")] = None


class ModerationImageURL(Body):
    url: Annotated[
        str, Meta(min_length=1, description="A base64 data URL, or an http(s) URL the gateway fetches.")
    ]


class ModerationTextPart(Body, tag_field="type", tag="text"):
    text: str


class ModerationImagePart(Body, tag_field="type", tag="image_url"):
    image_url: ModerationImageURL


class ModerationRequest(Body):
    input: Annotated[
        str | Annotated[list[str | ModerationTextPart | ModerationImagePart], Meta(min_length=1)],
        Meta(
            description="A text, texts (a result each), or text and image parts (one result).",
            extra={"expected": "a string or an array"},
        ),
    ]
    model: Annotated[
        Annotated[str, Meta(min_length=1)] | None, Meta(description="Default omni-moderation-latest.")
    ] = None

    def __post_init__(self) -> None:
        # Texts or parts, not both: an array mixing them is neither of OpenAI's forms.
        if isinstance(self.input, list) and not all(isinstance(v, str) for v in self.input):
            for i, part in enumerate(self.input):
                if isinstance(part, str):
                    raise InvalidRequest(
                        f"Invalid type for 'input[{i}]': expected an object (a text or image_url part) "
                        "in an array of parts.",
                        param=f"input[{i}]",
                        code="invalid_type",
                    )


CHAT = Shape(ChatCompletionRequest)
COMPLETION = Shape(CompletionRequest)
EMBEDDING = Shape(EmbeddingRequest)
MODERATION = Shape(ModerationRequest)
SHAPES = (CHAT, COMPLETION, EMBEDDING, MODERATION)
