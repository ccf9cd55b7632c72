"""Gemini embeddings ⇄ OpenAI embeddings: `:embedContent` / `:batchEmbedContents` bodies as
one OpenAI `/v1/embeddings` body (the gateway's canonical form), and the OpenAI answer back in
Gemini's shape.

Only text parts can be embedded through the canonical form. `taskType` and `title` have no
OpenAI equivalent and are dropped; `outputDimensionality` becomes `dimensions`, and since one
OpenAI call has one `dimensions`, every request of a batch must ask for the same one.
"""

from __future__ import annotations

import base64
import sys
from array import array
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.checks import optional_string
from unigate.translate.gemini_fields import Json, as_list, as_object, field


def embed_request(payload: Json, model: str) -> Json:
    """The OpenAI embeddings body for an `:embedContent` request (one content)."""
    return _openai_body([payload], model, "")


def batch_embed_request(payload: Json, model: str) -> Json:
    """The OpenAI embeddings body for a `:batchEmbedContents` request (`requests[]`, each one
    an embedContent request)."""
    requests = field(payload, "requests")
    if not isinstance(requests, list) or not requests:
        raise InvalidRequest("`requests` must be a non-empty array.", param="requests")
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            raise InvalidRequest(f"`requests[{i}]` must be an object.", param=f"requests[{i}]")
        # Google's rule: each request names the batch's own model (when it names one).
        named = optional_string(request.get("model"), f"requests[{i}].model")
        if named is not None and named.removeprefix("models/") != model:
            raise InvalidRequest(
                f"`requests[{i}].model` must be the batch's model, models/{model}.",
                param=f"requests[{i}].model",
            )
    return _openai_body(requests, model, "requests[].")


def _openai_body(requests: list[Json], model: str, where: str) -> Json:
    texts = []
    dimensions: set[Any] = set()
    for i, request in enumerate(requests):
        at = where.replace("[]", f"[{i}]")
        texts.append(_content_text(field(request, "content"), at + "content"))
        size = field(request, "outputDimensionality")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            # Checked here: a value that is no integer (an object) cannot even go in the set.
            raise InvalidRequest(
                "`outputDimensionality` must be a positive integer.", param=at + "outputDimensionality"
            )
        dimensions.add(size)
        # Dropped (no OpenAI equivalent), but a wrong type is still the client's error.
        optional_string(field(request, "taskType"), at + "taskType")
        optional_string(request.get("title"), at + "title")
    if len(dimensions) > 1:
        raise InvalidRequest(
            "Every request of a batch must ask for the same outputDimensionality.",
            param=where + "outputDimensionality",
        )
    # Floats explicitly: an upstream's default may be base64.
    body: Json = {"model": model, "input": texts, "encoding_format": "float"}
    size = dimensions.pop()
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidRequest(
                "`outputDimensionality` must be a positive integer.", param="outputDimensionality"
            )
        body["dimensions"] = size
    return body


def _content_text(content: Any, where: str) -> str:
    if not isinstance(content, dict):
        raise InvalidRequest(f"`{where}` must be an object with `parts`.", param=where)
    texts = []
    for part in as_list(content.get("parts")):
        text = as_object(part).get("text")
        if not isinstance(text, str):
            raise InvalidRequest(f"`{where}`: only text parts can be embedded.", param=where)
        texts.append(text)
    if not texts:
        raise InvalidRequest(f"`{where}` has no text parts.", param=where)
    # Google embeds a content's parts as one text; a newline keeps separate parts' words apart.
    return "\n".join(texts)


def embed_response(body: Json, batch: bool) -> Json:
    """Gemini's answer for an OpenAI embeddings answer: `{"embedding": {"values"}}` for
    embedContent, `{"embeddings": [{"values"}, ...]}` in input order for a batch."""
    data = sorted((as_object(d) for d in as_list(body.get("data"))), key=lambda d: int(d.get("index") or 0))
    vectors = [{"values": _values(d.get("embedding"))} for d in data]
    if batch:
        return {"embeddings": vectors}
    return {"embedding": vectors[0] if vectors else {"values": []}}


def _values(embedding: Any) -> list[float]:
    if isinstance(embedding, str):
        # An upstream that answered base64 anyway: little-endian float32.
        packed = array("f", base64.b64decode(embedding))
        if sys.byteorder == "big":
            packed.byteswap()
        return packed.tolist()
    return [float(v) for v in as_list(embedding)]
