"""Gemini embeddings ⇄ OpenAI embeddings: `:embedContent` / `:batchEmbedContents` bodies as
one OpenAI `/v1/embeddings` body (the gateway's canonical form), and the OpenAI answer back in
Gemini's shape; and the other way, an OpenAI embeddings call as `:batchEmbedContents` calls on
a Gemini embedding model, answered in OpenAI's shape.

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
from unigate.limits.estimate import prompt_tokens
from unigate.translate.checks import optional_string
from unigate.translate.gemini_fields import Json, as_list, as_object, field
from unigate.translate.token_ids import decode


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


def with_upstream_model(payload: Json, batch: bool, upstream: str) -> Json | None:
    """A Gemini embeddings request whose `model` fields (a batch's requests name theirs) name
    `upstream`, or None when none names another."""
    requests = as_list(payload.get("requests")) if batch else [payload]
    if all(as_object(r).get("model", upstream) == upstream for r in requests):
        return None
    renamed = [{**r, "model": upstream} if isinstance(r, dict) and "model" in r else r for r in requests]
    return {**payload, "requests": renamed} if batch else renamed[0]


def embed_tokens(payload: Json) -> int:
    """The tokens of a Gemini embeddings request's texts, as limits count them (Google reports none)."""
    return prompt_tokens(payload)


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


# ------------------------------------------------ OpenAI's embeddings on Gemini's models

BATCH = 100  # contents per `:batchEmbedContents` call, Google's limit
_OPENAI_READ = frozenset({"model", "input", "dimensions", "encoding_format"})


def gemini_batches(payload: Json, upstream_model: str) -> tuple[list[Json], list[str]]:
    """The `:batchEmbedContents` bodies (`BATCH` texts each) for an OpenAI embeddings request,
    and the fields they could not carry. Gemini embeds text: token arrays are sent as the text
    they spell (`token_ids.py`)."""
    texts = input_texts(payload.get("input"))
    one: Json = {"model": f"models/{upstream_model}"}
    size = payload.get("dimensions")
    if size is not None:
        one["outputDimensionality"] = size
    requests = [{**one, "content": {"parts": [{"text": text}]}} for text in texts]
    dropped = sorted(n for n, v in payload.items() if v not in (None, "") and n not in _OPENAI_READ)
    return [{"requests": requests[i : i + BATCH]} for i in range(0, len(requests), BATCH)], dropped


def input_texts(given: Any) -> list[str]:
    """OpenAI's embeddings `input` as texts: a string, strings, token ids or arrays of them."""
    if isinstance(given, str):
        return [given]
    items = as_list(given)
    if items and all(type(i) is int for i in items):
        return [decode(items, "input")]
    if not items or not all(isinstance(i, str | list) for i in items):
        raise InvalidRequest(
            "`input` must be a string, an array of strings or of token arrays.", param="input"
        )
    return [i if isinstance(i, str) else decode(i, f"input[{n}]") for n, i in enumerate(items)]


def input_tokens(given: Any) -> int:
    """The input's tokens: token arrays' ids counted, texts counted as limits count them."""
    items = as_list(given)
    if items and all(type(i) is int for i in items):
        return len(items)
    if items and all(isinstance(i, list) for i in items):
        return sum(len(i) for i in items)
    return prompt_tokens(given)


def openai_embeddings(answers: list[Json], model: str, encoding: str, tokens: int) -> Json:
    """OpenAI's embeddings answer for the batches' answers, in input order: float arrays, or
    base64 of little-endian float32 for `encoding_format: "base64"`."""
    vectors = [_values(as_object(e).get("values")) for a in answers for e in as_list(a.get("embeddings"))]
    data = [
        {"object": "embedding", "index": i, "embedding": _packed(v) if encoding == "base64" else v}
        for i, v in enumerate(vectors)
    ]
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _packed(values: list[float]) -> str:
    packed = array("f", values)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()
