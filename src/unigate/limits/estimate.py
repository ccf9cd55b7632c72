"""What a call is expected to use, before it runs: tokens for the tokens-per-minute limits and
money for the budget. Both are corrected from the real usage when the call ends, so these
only have to be cheap and rarely low.

Prompt tokens are counted locally over the request's text (every string value outside the
fields that are not text to a model): words and punctuation marks, the count the sandbox
reports and close to what BPE tokenizers give for English prose; inline files (base64) are not
counted. The body is counted in the client's own format (a Messages or generateContent request
is not translated first). The expected output is the
request's own cap (`max_tokens`, `max_completion_tokens`, `max_output_tokens`,
`generationConfig.maxOutputTokens`) when it has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"\w+|[^\w\s]")
# Keys whose string values are identifiers or options, not text the model reads.
_NOT_TEXT = frozenset(
    {"model", "role", "type", "id", "tool_call_id", "name", "response_format", "stream",
     "mime_type", "mimeType", "url", "image_url", "detail", "encoding_format", "user",
     # Anthropic's and Gemini's own bodies (counted as the client sent them): ids, media types,
     # thinking signatures and inline files are not text the model reads as words.
     "tool_use_id", "media_type", "signature", "cache_control", "inlineData", "inline_data"}
)  # fmt: skip
# Anthropic blocks whose data is opaque bytes: a base64 source, redacted thinking.
_OPAQUE = frozenset({"base64", "redacted_thinking"})
_OUTPUT_CAPS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Prices:
    """A model's prices: per million input and output tokens, and per call."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0
    per_call: float = 0.0

    @property
    def by_token(self) -> bool:
        return bool(self.input_per_million or self.output_per_million)

    def tokens_cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """A completed call's price: its tokens and the per-call price."""
        return self.tokens_cost(prompt_tokens, completion_tokens) + self.per_call


def count_tokens(text: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(text))


def prompt_tokens(payload: Any) -> int:
    """Tokens of every text value in a request body (a parsed JSON object)."""
    total = 0
    stack: list[tuple[Any, int]] = [(payload, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            total += count_tokens(value)
        elif depth >= _MAX_DEPTH:
            continue
        elif isinstance(value, dict):
            kind = value.get("type")
            if isinstance(kind, str) and kind in _OPAQUE:
                continue
            stack.extend((v, depth + 1) for k, v in value.items() if k not in _NOT_TEXT)
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return total


def output_cap(payload: Any) -> int | None:
    """The request's own cap on output tokens, if it gives one."""
    if not isinstance(payload, dict):
        return None
    for name in _OUTPUT_CAPS:
        value = payload.get(name)
        if type(value) is int and value >= 0:
            return value
    config = payload.get("generationConfig") or payload.get("generation_config")
    if isinstance(config, dict):
        value = config.get("maxOutputTokens", config.get("max_output_tokens"))
        if type(value) is int and value >= 0:
            return value
    return None
