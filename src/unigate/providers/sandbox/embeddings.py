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

from unigate.providers.base import Reply, TextCall
from unigate.providers.sandbox.params import invalid_type, invalid_value, is_int, optional_int
from unigate.providers.sandbox.tokens import count_tokens, tokenize
from unigate.providers.sandbox.wire import json_reply
from unigate.usage.recorder import Usage

DEFAULT_DIMENSIONS = 256
MAX_DIMENSIONS = 4096
MAX_INPUTS = 2048
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


def hashed_vector(features: Counter[str], dimensions: int) -> list[float]:
    """The signed, sublinearly weighted, L2-normalised feature-hash vector."""
    vec = [0.0] * dimensions
    for feature, count in sorted(features.items()):  # a fixed summation order: bit-stable floats
        weight = (1.0 + math.log(count)) * (TRIGRAM_WEIGHT if feature.startswith("c:") else WORD_WEIGHT)
        bucket, negative = _slot(feature, dimensions)
        vec[bucket] += -weight if negative else weight
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        # No features (whitespace only) or exact cancellation: any fixed unit vector will do.
        vec = [0.0] * dimensions
        vec[_slot("empty", dimensions)[0]] = 1.0
        return vec
    return [v / norm for v in vec]


def _slot(feature: str, dimensions: int) -> tuple[int, bool]:
    # blake2b, not hash(): Python's string hash is salted per process.
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dimensions, bool(h >> 63)


def encode(vec: list[float], encoding: str) -> list[float] | str:
    """Float32 values as a list, or as base64 of their little-endian bytes (what the openai
    SDK requests by default and decodes with numpy); both carry identical float32 values."""
    packed = array("f", vec)
    if encoding == "float":
        return packed.tolist()
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def parse_inputs(payload: dict[str, Any]) -> list[tuple[Counter[str], int]]:
    """Each input's features and token count; `input` is str | str[] | int[] | int[][]."""
    raw = payload.get("input")
    if isinstance(raw, str):
        return [_text_input(raw, "input")]
    if not isinstance(raw, list) or not raw:
        raise invalid_type("input", "a non-empty string, an array of strings, or token arrays")
    if len(raw) > MAX_INPUTS:
        raise invalid_value("input", f"at most {MAX_INPUTS} inputs are allowed per request.")
    if all(is_int(t) for t in raw):
        return [_token_input(raw, "input")]
    if all(isinstance(t, str) for t in raw):
        return [_text_input(t, f"input[{i}]") for i, t in enumerate(raw)]
    if all(isinstance(t, list) for t in raw):
        return [_token_input(t, f"input[{i}]") for i, t in enumerate(raw)]
    raise invalid_type("input", "a non-empty string, an array of strings, or token arrays")


def _text_input(text: str, where: str) -> tuple[Counter[str], int]:
    if not text:
        raise invalid_value(where, "the input must not be an empty string.")
    return text_features(text), count_tokens(text)


def _token_input(ids: list[Any], where: str) -> tuple[Counter[str], int]:
    if not ids or not all(is_int(t) and t >= 0 for t in ids):
        raise invalid_type(where, "a non-empty array of non-negative token ids")
    return token_features(ids), len(ids)


def embeddings_reply(call: TextCall) -> Reply:
    payload = call.payload
    inputs = parse_inputs(payload)
    dimensions = optional_int(payload, "dimensions", 1, MAX_DIMENSIONS) or DEFAULT_DIMENSIONS
    encoding = payload.get("encoding_format")
    if encoding is None:
        encoding = "float"
    if encoding not in ("float", "base64"):
        raise invalid_value("encoding_format", "expected 'float' or 'base64'.")
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": encode(hashed_vector(features, dimensions), encoding),
        }
        for i, (features, _) in enumerate(inputs)
    ]
    usage = Usage(prompt_tokens=sum(tokens for _, tokens in inputs))
    body = {
        "object": "list",
        "data": data,
        "model": call.model,
        "usage": {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.prompt_tokens},
    }
    return json_reply(body, usage)
