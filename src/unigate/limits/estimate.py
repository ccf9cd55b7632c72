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

A canonical chat request's prompt is counted by `chat_prompt_tokens` with message framing,
attachments and tool schemas priced too: the count token-count endpoints answer when no
upstream counts (api/serving/token_count.py), and the one the sandbox reports for its chat calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from unigate.recent_values import RecentValues

_TOKEN: Final = re.compile(r"\w+|[^\w\s]")
# Keys whose string values are identifiers or options, not text the model reads.
_NOT_TEXT: Final = frozenset(
    {"model", "role", "type", "id", "tool_call_id", "name", "response_format", "stream",
     "mime_type", "mimeType", "url", "image_url", "detail", "encoding_format", "user",
     # Anthropic's and Gemini's own bodies (counted as the client sent them): ids, media types,
     # thinking signatures and inline files are not text the model reads as words.
     "tool_use_id", "media_type", "signature", "cache_control", "inlineData", "inline_data"}
)  # fmt: skip
# Anthropic blocks whose data is opaque bytes: a base64 source, redacted thinking.
_OPAQUE: Final = frozenset({"base64", "redacted_thinking"})
_OUTPUT_CAPS: Final = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_GENERATION_CONFIGS: Final = ("generationConfig", "generation_config")
# Every field a cap can be in: most bodies have none, which one C-level test tells.
_CAP_FIELDS: Final = frozenset(_OUTPUT_CAPS + _GENERATION_CONFIGS)
_MAX_DEPTH: Final = 64
_CONTAINERS: Final = (dict, list)  # a tuple: `dict | list` would build a union at every test
# A chat prompt's framing: per message, per attached image, per other attachment (audio, file),
# per tool, and the primer of the assistant's reply.
MESSAGE_OVERHEAD: Final = 4
IMAGE_TOKENS: Final = 85
ATTACHMENT_TOKENS: Final = 50
TOOL_OVERHEAD: Final = 8
REPLY_PRIMER: Final = 3


@dataclass(frozen=True, slots=True)
class Prices:
    """A model's prices: per million input and output tokens, and per call."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0
    per_call: float = 0.0

    def cost(self, prompt_tokens: float, completion_tokens: float, calls: float = 1.0) -> float:
        """The price of the tokens and of `calls` calls (0 for a failed call, which pays only
        for what it consumed)."""
        tokens = prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        return tokens / 1e6 + calls * self.per_call


_words = _TOKEN.findall


def _classes() -> bytes:
    """A `bytes.translate` table marking each ASCII character as `_TOKEN` classes it: `a` a word
    character, ` ` whitespace, `.` a mark that is a token alone (built by asking the regex
    itself, so the two cannot disagree)."""
    marks = bytearray(b"." * 256)
    for code in range(128):
        char = chr(code)
        if re.fullmatch(r"\w", char):
            marks[code] = ord("a")
        elif re.fullmatch(r"\s", char):
            marks[code] = ord(" ")
    return bytes(marks)


_CLASSES: Final = _classes()


def count_tokens(text: str) -> int:
    """`len(_TOKEN.findall(text))` without building the list of tokens. A string of word
    characters alone (`isalnum` tests exactly the regex's `\\w`, less `_`) is one token; ASCII
    text is classed byte by byte and its tokens are its marks plus the starts of its word runs,
    counted by C loops (~5x faster than the regex on prose); other text goes to the regex."""
    if text.isalnum():
        return 1
    if text.isascii():
        marks = text.encode().translate(_CLASSES)
        starts = marks.count(b" a") + marks.count(b".a") + marks.startswith(b"a")
        return marks.count(b".") + starts
    return len(_words(text))


LONG_TEXT: Final = 256  # characters from which a text's count is worth remembering (`TextTokens`)


class TextTokens:
    """The token counts of long texts seen lately. A coding agent sends its whole conversation
    again with every call, and counting it is dear (~3.5 µs a KB: a 124 KB body took 0.6 ms to
    count, five times its JSON parse), while looking a text up costs its hash and one compare
    (~0.3 µs a KB). Bounded by the characters held (`RecentValues`)."""

    def __init__(self, max_chars: int = 4_000_000) -> None:
        self._counts = RecentValues[str, int](max_chars)

    def __call__(self, text: str) -> int:
        """`count_tokens(text)`, remembered (given texts of `LONG_TEXT` characters or more:
        `prompt_tokens` counts shorter ones itself)."""
        found = self._counts.get(text)
        if found is None:
            found = count_tokens(text)
            self._counts.put(text, found, text)
        return found


class ListTokens(Protocol):
    """Counts a long list in a body (a field's value, at nesting `depth`) as `prompt_tokens`
    would, faster (recent_lists.py): `prompt_tokens` hands it the lists of `min_items` items or
    more."""

    min_items: int

    def __call__(self, field: str, items: list[Any], long: Callable[[str], int], depth: int = 1) -> int: ...


def prompt_tokens(
    payload: Any, long: Callable[[str], int] = count_tokens, depth: int = 0, lists: ListTokens | None = None
) -> int:
    """Tokens of every text value in a request body (a parsed JSON object), `payload` being at
    nesting `depth` (containers past `_MAX_DEPTH` count nothing): texts of `LONG_TEXT`
    characters or more counted by `long` (a `TextTokens` remembers them), shorter ones
    directly; the long lists in its fields by `lists` when given (a conversation, a tool list,
    Gemini's function declarations one level down). Recursive with strings counted in place:
    this runs on every limited call."""
    total = 0
    deeper = depth + 1 < _MAX_DEPTH
    if isinstance(payload, dict):
        kind = payload.get("type")
        if isinstance(kind, str) and kind in _OPAQUE:
            return 0
        for key, item in payload.items():
            if key in _NOT_TEXT:
                continue
            if isinstance(item, str):
                total += count_tokens(item) if len(item) < LONG_TEXT else long(item)
            elif deeper and isinstance(item, _CONTAINERS):
                if lists is not None and type(item) is list and len(item) >= lists.min_items:
                    total += lists(key, item, long, depth + 1)
                else:
                    total += prompt_tokens(item, long, depth + 1, lists)
        return total
    if isinstance(payload, list):
        for item in payload:
            if isinstance(item, str):
                total += count_tokens(item) if len(item) < LONG_TEXT else long(item)
            elif deeper and isinstance(item, _CONTAINERS):
                total += prompt_tokens(item, long, depth + 1, lists)
        return total
    if isinstance(payload, str):
        return count_tokens(payload) if len(payload) < LONG_TEXT else long(payload)
    return 0


def output_cap(payload: Any) -> int | None:
    """The request's own cap on output tokens, if it gives one."""
    if not isinstance(payload, dict) or _CAP_FIELDS.isdisjoint(payload):
        return None
    for name in _OUTPUT_CAPS:
        value = payload.get(name)
        if type(value) is int and value >= 0:
            return value
    config = payload.get(_GENERATION_CONFIGS[0]) or payload.get(_GENERATION_CONFIGS[1])
    if isinstance(config, dict):
        value = config.get("maxOutputTokens", config.get("max_output_tokens"))
        if type(value) is int and value >= 0:
            return value
    return None


def chat_prompt_tokens(request: Any) -> int:
    """The prompt tokens of a canonical (OpenAI-format) chat request: its messages (text,
    attachments, an assistant's tool calls), tool schemas and JSON-schema response format.
    Parts that are not well-formed count nothing (validating is the caller's business)."""
    if not isinstance(request, dict):
        return 0
    total = REPLY_PRIMER
    messages = request.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict):
            total += MESSAGE_OVERHEAD + _content_tokens(message.get("content"))
            if message.get("role") == "assistant":
                total += _tool_call_tokens(message.get("tool_calls"))
    tools = request.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            parameters = fn.get("parameters")
            if parameters is None:
                parameters = {"type": "object", "properties": {}}  # a tool without arguments
            total += TOOL_OVERHEAD + _text_tokens(fn.get("name")) + _text_tokens(fn.get("description"))
            total += count_tokens(orjson.dumps(parameters).decode())
    fmt = request.get("response_format")
    spec = fmt.get("json_schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if isinstance(schema, dict):
        total += count_tokens(orjson.dumps(schema).decode())
    return total


def _text_tokens(value: Any) -> int:
    return count_tokens(value) if isinstance(value, str) else 0


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return count_tokens(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            total += _text_tokens(part.get("text"))
        elif kind == "refusal":
            total += count_tokens(str(part.get("refusal") or ""))
        elif kind in ("image_url", "image"):
            total += IMAGE_TOKENS
        elif isinstance(kind, str):
            total += ATTACHMENT_TOKENS
    return total


def _tool_call_tokens(calls: Any) -> int:
    total = 0
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            total += _text_tokens(fn.get("name")) + _text_tokens(fn.get("arguments", ""))
    return total
