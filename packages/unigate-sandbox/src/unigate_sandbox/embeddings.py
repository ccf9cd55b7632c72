"""`/v1/embeddings` for the sandbox: feature-hashed bag-of-words vectors.

Each lowercased token and each character trigram of each word (with boundary markers, so
"cat" gives "<ca", "cat", "at>") is hashed with blake2b into one of `dimensions` buckets
with a sign bit, weighted sublinearly (1 + ln count), and the vector is L2-normalised. The
result is stable across processes and platforms, and texts that share words or word
pieces get a higher cosine similarity than unrelated ones, which is enough for tests of
retrieval-style code.
"""

from __future__ import annotations

import base64
import hashlib
import math
import sys
from array import array
from collections import Counter
from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.providers.base import Reply, TextCall
from unigate.usage.recorder import Usage
from unigate_sandbox.params import invalid_type, invalid_value, is_int, optional_int
from unigate_sandbox.tokens import count_tokens, tokenize

DEFAULT_DIMENSIONS = 256
# OpenAI's own limits: the largest model's size (text-embedding-3-large), inputs per
# request, tokens per input and per request.
MAX_DIMENSIONS = 3072
MAX_INPUTS = 2048
MAX_INPUT_TOKENS = 8192
MAX_TOTAL_TOKENS = 300_000
# The sandbox's tokens are words: a long "word" is one token to it but many to a real
# tokenizer, so characters are bounded too (8 per token is generous for real text).
MAX_INPUT_CHARS = 8 * MAX_INPUT_TOKENS
# Requests at most this large (body bytes, inputs x dimensions) are answered on the event
# loop (well under a millisecond); larger ones in a worker thread.
INLINE_BODY = 16 * 1024
INLINE_VALUES = 4096
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5  # word pieces matter, but less than whole words


def text_features(text: str) -> Counter[str]:
    features: Counter[str] = Counter()
    for token in tokenize(text.lower()):
        features["w:" + token] += 1
        if token[0].isalnum() or token[0] == "_":
            marked = f"<{token}>"
            for i in range(len(marked) - 2):
                features["c:" + marked[i : i + 3]] += 1
    return features


def token_features(ids: list[int]) -> Counter[str]:
    return Counter(f"t:{t}" for t in ids)


def hashed_vector(features: Counter[str], dimensions: int) -> array[float]:
    """The signed, sublinearly weighted, L2-normalised feature-hash vector, as float32.
    Built sparsely (a text has tens of features, a vector thousands of dimensions): summing
    the non-zero buckets in bucket order gives the same floats as summing the dense vector."""
    buckets: dict[int, float] = {}
    for feature, count in sorted(features.items()):  # a fixed summation order: bit-stable floats
        weight = (1.0 + math.log(count)) * (TRIGRAM_WEIGHT if feature.startswith("c:") else WORD_WEIGHT)
        bucket, negative = _slot(feature, dimensions)
        buckets[bucket] = buckets.get(bucket, 0.0) + (-weight if negative else weight)
    ordered = sorted(buckets.items())
    norm = math.sqrt(sum(v * v for _, v in ordered))
    vec = array("f", bytes(4 * dimensions))
    if norm == 0.0:
        # No features (whitespace only) or exact cancellation: any fixed unit vector will do.
        vec[_slot("empty", dimensions)[0]] = 1.0
        return vec
    for bucket, value in ordered:
        vec[bucket] = value / norm
    return vec


def _slot(feature: str, dimensions: int) -> tuple[int, bool]:
    # blake2b, not hash(): Python's string hash is salted per process.
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dimensions, bool(h >> 63)


def encode(vec: array[float], encoding: str) -> list[float] | str:
    """Float32 values as a list, or as base64 of their little-endian bytes (what the openai
    SDK requests by default and decodes with numpy); both carry identical float32 values."""
    if encoding == "float":
        return vec.tolist()
    if sys.byteorder == "big":
        vec = array("f", vec)
        vec.byteswap()
    return base64.b64encode(vec.tobytes()).decode("ascii")


def parse_inputs(payload: dict[str, Any]) -> list[tuple[Counter[str], int]]:
    """Each input's features and token count; `input` is str | str[] | int[] | int[][].
    Sizes are checked before any features are computed, so a refused request costs little."""
    raw = payload.get("input")
    if isinstance(raw, str):
        texts: list[tuple[str | list[Any], str]] = [(raw, "input")]
    elif not isinstance(raw, list) or not raw:
        raise invalid_type("input", "a non-empty string, an array of strings, or token arrays")
    elif len(raw) > MAX_INPUTS:
        raise invalid_value("input", f"at most {MAX_INPUTS} inputs are allowed per request.")
    elif all(is_int(t) for t in raw):
        texts = [(raw, "input")]
    elif all(isinstance(t, str | list) for t in raw) and len({type(t) for t in raw}) == 1:
        texts = [(t, f"input[{i}]") for i, t in enumerate(raw)]
    else:
        raise invalid_type("input", "a non-empty string, an array of strings, or token arrays")
    total = 0
    counts: list[int] = []  # every size before any features, stopping at the first excess
    for value, where in texts:
        counts.append(_tokens(value, where))
        total += counts[-1]
        if total > MAX_TOTAL_TOKENS:
            raise invalid_value("input", f"at most {MAX_TOTAL_TOKENS} tokens are allowed per request in all.")
    return [
        (text_features(value) if isinstance(value, str) else token_features(value), tokens)
        for (value, _), tokens in zip(texts, counts, strict=True)
    ]


def _tokens(value: str | list[Any], where: str) -> int:
    """The input's token count, once it is known to be a valid input within the limits."""
    if len(value) > (MAX_INPUT_CHARS if isinstance(value, str) else MAX_INPUT_TOKENS):
        raise _too_long(where)
    if isinstance(value, str):
        if not value:
            raise invalid_value(where, "the input must not be an empty string.")
        tokens = count_tokens(value, MAX_INPUT_TOKENS)
        if tokens > MAX_INPUT_TOKENS:
            raise _too_long(where)
        return tokens
    if not value or not all(is_int(t) and t >= 0 for t in value):
        raise invalid_type(where, "a non-empty array of non-negative token ids")
    return len(value)


def _too_long(where: str) -> InvalidRequest:
    return invalid_value(where, f"each input may hold at most {MAX_INPUT_TOKENS} tokens.")


def is_heavy(call: TextCall) -> bool:
    """Whether building this reply may take more than a fraction of a millisecond (then it
    runs in a worker thread, off the event loop)."""
    if len(call.body) > INLINE_BODY:
        return True
    raw, dims = call.payload.get("input"), call.payload.get("dimensions")
    count = len(raw) if isinstance(raw, list) and raw and not is_int(raw[0]) else 1
    size = dims if isinstance(dims, int) and not isinstance(dims, bool) and dims > 0 else DEFAULT_DIMENSIONS
    return count * size > INLINE_VALUES


def embeddings_reply(call: TextCall) -> Reply:
    payload = call.payload
    dimensions = optional_int(payload, "dimensions", 1, MAX_DIMENSIONS) or DEFAULT_DIMENSIONS
    inputs = parse_inputs(payload)
    encoding = payload.get("encoding_format")
    if encoding is None:
        encoding = "float"
    if encoding not in ("float", "base64"):
        raise invalid_value("encoding_format", "expected 'float' or 'base64'.")
    # Serialised one vector at a time: one orjson call over 2048 x 3072 floats holds the GIL
    # for ~150 ms, stalling the event loop while this runs in a worker thread.
    items = [
        orjson.dumps(
            {
                "object": "embedding",
                "index": i,
                "embedding": encode(hashed_vector(features, dimensions), encoding),
            }
        )
        for i, (features, _) in enumerate(inputs)
    ]
    usage = Usage(prompt_tokens=sum(tokens for _, tokens in inputs))
    tail = {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.prompt_tokens}
    body = b"".join(
        (
            b'{"object":"list","data":[',
            b",".join(items),
            b'],"model":',
            orjson.dumps(call.model),
            b',"usage":',
            orjson.dumps(tail),
            b"}",
        )
    )
    return Reply(status=200, content_type=b"application/json", body=body, usage=usage)
