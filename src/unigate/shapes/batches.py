"""The batch APIs' create bodies: OpenAI's `POST /v1/batches` and Anthropic's `POST
/v1/messages/batches` (`api/openai/batches.py`, `api/anthropic/batches.py`).

Anthropic's requests are declared down to each `params`, a Messages request checked by the
Messages declaration (a refusal names it: `requests[2].params.max_tokens`); the lines keep the
client's own `params` objects, relayed as a direct call's body would be."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from unigate.shapes.anthropic import AnthropicMessageRequest
from unigate.shapes.declare import Body, Shape

BatchEndpoint = Literal[
    "/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses", "/v1/moderations"
]
Metadata = Annotated[
    dict[Annotated[str, Meta(max_length=64)], Annotated[str, Meta(max_length=512)]],
    Meta(max_length=16, description="Up to 16 string pairs, returned with the batch."),
]


class BatchCreateRequest(Body):
    """A batch of requests to one endpoint, read from an uploaded JSONL file."""

    input_file_id: Annotated[str, Meta(min_length=1, description="An uploaded .jsonl file of requests.")]
    endpoint: BatchEndpoint
    completion_window: Literal["24h"]
    metadata: Metadata | None = None


class MessageBatchRequest(Body):
    custom_id: Annotated[
        str, Meta(pattern="^[a-zA-Z0-9_-]{1,64}$", description="Names the request's result.")
    ]
    params: Annotated[
        AnthropicMessageRequest, Meta(description="A Messages request (POST /v1/messages), not streamed.")
    ]


class MessageBatchCreateRequest(Body):
    """A batch of Messages requests, given inline."""

    requests: Annotated[list[MessageBatchRequest], Meta(min_length=1)]


BATCH = Shape(BatchCreateRequest)
MESSAGE_BATCH = Shape(MessageBatchCreateRequest)
