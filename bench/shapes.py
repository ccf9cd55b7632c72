"""What it costs to decode and validate a request body: today's hand-written checks against the
same rules declared as msgspec Structs and as pydantic v2 models.

    .venv/bin/python bench/shapes.py [--rounds 20000]

Four representative bodies (a chat request with tools, a Responses request, an images request,
a music submit), each measured as the router pays for it: the body decoded into the dict the
rest of the gateway reads (orjson), then checked. The candidates:

- `hand`: orjson, then the checks the routers had before declarations (copied here so the
  figure stays comparable once the routers no longer have them);
- `msgspec-decode`: orjson, then the body's bytes decoded again by a typed `msgspec.json.Decoder`
  (unknown fields skipped in C, nothing kept but the error);
- `msgspec-convert`: orjson, then `msgspec.convert` of the dict;
- `pydantic-python`: orjson, then `TypeAdapter.validate_python` of the dict;
- `pydantic-json`: orjson, then `TypeAdapter.validate_json` of the bytes;
- `unigate`: orjson, then the gateway's own declaration of that body (`unigate.shapes`:
  `Shape.check`, msgspec.convert of the dict), which declares more than the mirrors above
  (every field the document states, not only the hand-written checks').

Each figure is the fastest of 7 runs of `--rounds` calls, in µs per body (other load on a shared
machine only ever adds to a run).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
import orjson
import pydantic
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from unigate.shapes import images, music, responses, text
from unigate.shapes.declare import Shape

# --- the bodies -----------------------------------------------------------------------------

_PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city"],
}
CHAT = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the weather in Paris and in Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, cloudy"},
        {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Weather now", "parameters": _PARAMS},
        },
        {
            "type": "function",
            "function": {"name": "forecast", "description": "Tomorrow", "parameters": _PARAMS},
        },
    ],
    "tool_choice": "auto",
    "temperature": 0.2,
    "max_tokens": 512,
    "stream": True,
    "stream_options": {"include_usage": True},
}
RESPONSES = {
    "model": "gpt-4.1-mini",
    "instructions": "Answer briefly.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C, cloudy"},
    ],
    "tools": [{"type": "function", "name": "weather", "parameters": _PARAMS}],
    "text": {"format": {"type": "json_schema", "name": "answer", "schema": _PARAMS}},
    "reasoning": {"effort": "low"},
    "metadata": {"ticket": "T-1"},
    "max_output_tokens": 800,
    "store": True,
    "stream": False,
}
IMAGES = {
    "model": "gpt-image-1",
    "prompt": "a lighthouse on a cliff at dusk, oil painting",
    "n": 2,
    "size": "1024x1024",
    "response_format": "b64_json",
    "output_format": "png",
    "background": "auto",
    "output_compression": 80,
    "quality": "high",
}
MUSIC = {
    "prompt": "[Verse]\nNeon rivers run through the city\n[Chorus]\nWe are the night",
    "tags": "synthwave, female vocals",
    "title": "Neon Rivers",
    "mv": "chirp-v4",
    "make_instrumental": False,
    "continue_clip_id": str(uuid.UUID(int=7)),
    "continue_at": 30,
}

# --- today's hand-written checks (as the routers had them) -----------------------------------

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


class Bad(Exception):
    pass


def hand_chat(p: dict[str, Any]) -> None:
    model = p.get("model")
    if not isinstance(model, str) or not model:
        raise Bad("model")
    if p.get("stream_options") is not None and type(p["stream_options"]) is not dict:
        raise Bad("stream_options")
    if p.get("stream") is not None and not isinstance(p["stream"], bool):
        raise Bad("stream")
    messages = p.get("messages")
    if type(messages) is not list or not messages:
        raise Bad("messages")
    for msg in messages:
        if type(msg) is not dict:
            raise Bad("message")
        try:
            bad_role = msg.get("role") not in _ROLES
        except TypeError:
            bad_role = True
        if bad_role:
            raise Bad("role")
        content = msg.get("content")
        if content is not None and type(content) is not str and type(content) is not list:
            raise Bad("content")
    for name, kind in (("tools", list), ("max_tokens", int), ("max_completion_tokens", int), ("n", int)):
        value = p.get(name)
        if value is not None and type(value) is not kind:
            raise Bad(name)
    temperature = p.get("temperature")
    if temperature is not None and type(temperature) not in (int, float):
        raise Bad("temperature")


def hand_responses(p: dict[str, Any]) -> None:  # noqa: C901 - one check per field, as inline
    """The checks of the fields the declaration covers (model, flags, strings, metadata,
    numbers, reasoning, text.format, include); the items' own normalisation is not a check of
    the body's shape and stays in code on either side."""
    model = p.get("model")
    if not isinstance(model, str) or not model:
        raise Bad("model")
    for name in ("stream", "store", "background", "parallel_tool_calls"):
        if p.get(name) is not None and not isinstance(p[name], bool):
            raise Bad(name)
    for name in ("previous_response_id", "instructions", "user", "safety_identifier", "prompt_cache_key",
                 "service_tier", "truncation"):  # fmt: skip
        if p.get(name) is not None and not isinstance(p[name], str):
            raise Bad(name)
    if p.get("input") is not None and not isinstance(p["input"], str | list):
        raise Bad("input")
    if p.get("tools") is not None and not isinstance(p["tools"], list):
        raise Bad("tools")
    metadata = p.get("metadata") or {}
    if not isinstance(metadata, dict) or len(metadata) > 16:
        raise Bad("metadata")
    for key, value in metadata.items():
        if len(key) > 64 or not isinstance(value, str) or len(value) > 512:
            raise Bad("metadata")
    limit = p.get("max_output_tokens")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise Bad("max_output_tokens")
    for name in ("temperature", "top_p"):
        value = p.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise Bad(name)
    reasoning = p.get("reasoning") or {}
    if not isinstance(reasoning, dict):
        raise Bad("reasoning")
    if reasoning.get("effort") not in (None, "none", "minimal", "low", "medium", "high", "xhigh"):
        raise Bad("reasoning.effort")
    text = p.get("text") or {}
    if not isinstance(text, dict):
        raise Bad("text")
    fmt = text.get("format") or {}
    if not isinstance(fmt, dict) or fmt.get("type") not in (None, "text", "json_object", "json_schema"):
        raise Bad("text.format")
    if fmt.get("name") is not None and not isinstance(fmt["name"], str):
        raise Bad("text.format.name")
    if fmt.get("schema") is not None and not isinstance(fmt["schema"], dict):
        raise Bad("text.format.schema")
    if p.get("stream_options") is not None and not isinstance(p["stream_options"], dict):
        raise Bad("stream_options")
    include = p.get("include") or []
    if not isinstance(include, list) or not all(isinstance(v, str) for v in include):
        raise Bad("include")


_IMAGE_FORMATS = ("png", "jpeg", "webp")


def _int(p: dict[str, Any], name: str, lo: int, hi: int) -> None:
    value = p.get(name)
    if value is None or value == "":
        return
    if isinstance(value, bool | float):
        raise Bad(name)
    try:
        parsed = int(value)
    except (TypeError, ValueError):
        raise Bad(name) from None
    if not lo <= parsed <= hi:
        raise Bad(name)


def _choice(p: dict[str, Any], name: str, options: tuple[str, ...]) -> None:
    value = p.get(name)
    if value is None or value == "":
        return
    if not isinstance(value, str) or value not in options:
        raise Bad(name)


def _text(p: dict[str, Any], name: str) -> None:
    if p.get(name) is not None and not isinstance(p[name], str):
        raise Bad(name)


def hand_images(p: dict[str, Any]) -> None:
    import re

    prompt = p.get("prompt")
    if not isinstance(prompt, str) or not prompt or len(prompt) > 32_000:
        raise Bad("prompt")
    _int(p, "n", 1, 10)
    _text(p, "size")
    if p.get("size") is not None and not re.match(r"^(auto|\d{2,5}x\d{2,5})$", p["size"]):
        raise Bad("size")
    _choice(p, "response_format", ("url", "b64_json"))
    _choice(p, "output_format", _IMAGE_FORMATS)
    _choice(p, "background", ("transparent", "opaque", "auto"))
    _int(p, "output_compression", 0, 100)
    _text(p, "quality")
    _text(p, "style")
    _text(p, "model")


_MUSIC_LENGTHS = {
    "prompt": 5000, "gpt_description_prompt": 3000, "title": 200, "tags": 1000, "task": 40, "mv": 100,
}  # fmt: skip


def hand_music(p: dict[str, Any]) -> None:
    for name, most in _MUSIC_LENGTHS.items():
        value = p.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > most or "\x00" in value):
            raise Bad(name)
    at = p.get("continue_at")
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= 86_400):
        raise Bad("continue_at")
    clip = p.get("continue_clip_id")
    if clip:
        try:
            if not isinstance(clip, str) or str(uuid.UUID(clip)) != clip.lower():
                raise Bad("continue_clip_id")
        except ValueError:
            raise Bad("continue_clip_id") from None
    if p.get("make_instrumental") is not None and not isinstance(p["make_instrumental"], bool):
        raise Bad("make_instrumental")


# --- the same rules as msgspec Structs --------------------------------------------------------

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class MMessage(msgspec.Struct):
    role: Role
    content: str | list[Any] | None = None


class MChat(msgspec.Struct):
    model: NonEmpty
    messages: Annotated[list[MMessage], msgspec.Meta(min_length=1)]
    tools: list[Any] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: int | None = None
    temperature: float | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None


class MReasoning(msgspec.Struct):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None


class MFormat(msgspec.Struct):
    type: Literal["text", "json_object", "json_schema"] | None = None
    name: str | None = None
    schema: dict[str, Any] | None = None


class MText(msgspec.Struct):
    format: MFormat | None = None


class MResponses(msgspec.Struct):
    model: NonEmpty
    input: str | list[Any] | None = None
    instructions: str | None = None
    stream: bool | None = None
    store: bool | None = None
    background: bool | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    service_tier: str | None = None
    truncation: str | None = None
    tools: list[Any] | None = None
    metadata: (
        Annotated[
            dict[Annotated[str, msgspec.Meta(max_length=64)], Annotated[str, msgspec.Meta(max_length=512)]],
            msgspec.Meta(max_length=16),
        ]
        | None
    ) = None
    max_output_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: MReasoning | None = None
    text: MText | None = None
    stream_options: dict[str, Any] | None = None
    include: list[str] | None = None


class MImages(msgspec.Struct):
    prompt: Annotated[str, msgspec.Meta(min_length=1, max_length=32_000)]
    model: str | None = None
    n: Annotated[int, msgspec.Meta(ge=1, le=10)] | None = None
    size: Annotated[str, msgspec.Meta(pattern=r"^(auto|\d{2,5}x\d{2,5})$")] | None = None
    response_format: Literal["url", "b64_json"] | None = None
    output_format: Literal["png", "jpeg", "webp"] | None = None
    background: Literal["transparent", "opaque", "auto"] | None = None
    output_compression: Annotated[int, msgspec.Meta(ge=0, le=100)] | None = None
    quality: str | None = None
    style: str | None = None


_UUID = r"^$|^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def _mtext(most: int) -> Any:
    return Annotated[str, msgspec.Meta(max_length=most, pattern=r"^[^\x00]*$")] | None


class MMusic(msgspec.Struct):
    prompt: _mtext(5000) = None  # type: ignore[valid-type]
    gpt_description_prompt: _mtext(3000) = None  # type: ignore[valid-type]
    title: _mtext(200) = None  # type: ignore[valid-type]
    tags: _mtext(1000) = None  # type: ignore[valid-type]
    task: _mtext(40) = None  # type: ignore[valid-type]
    mv: _mtext(100) = None  # type: ignore[valid-type]
    make_instrumental: bool | None = None
    continue_at: Annotated[int, msgspec.Meta(ge=0, le=86_400)] | None = None
    continue_clip_id: Annotated[str, msgspec.Meta(pattern=_UUID)] | None = None


# --- the same rules as pydantic models --------------------------------------------------------

_STRICT = ConfigDict(strict=True, extra="ignore")


class PMessage(BaseModel):
    model_config = _STRICT
    role: Role
    content: str | list[Any] | None = None


class PChat(BaseModel):
    model_config = _STRICT
    model: Annotated[str, Field(min_length=1)]
    messages: Annotated[list[PMessage], Field(min_length=1)]
    tools: list[Any] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: int | None = None
    temperature: float | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None


class PReasoning(BaseModel):
    model_config = _STRICT
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None


class PFormat(BaseModel):
    model_config = _STRICT
    type: Literal["text", "json_object", "json_schema"] | None = None
    name: str | None = None
    schema_: Annotated[dict[str, Any] | None, Field(alias="schema")] = None


class PText(BaseModel):
    model_config = _STRICT
    format: PFormat | None = None


class PResponses(BaseModel):
    model_config = _STRICT
    model: Annotated[str, Field(min_length=1)]
    input: str | list[Any] | None = None
    instructions: str | None = None
    stream: bool | None = None
    store: bool | None = None
    background: bool | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    service_tier: str | None = None
    truncation: str | None = None
    tools: list[Any] | None = None
    metadata: (
        Annotated[
            dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=512)]],
            Field(max_length=16),
        ]
        | None
    ) = None
    max_output_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: PReasoning | None = None
    text: PText | None = None
    stream_options: dict[str, Any] | None = None
    include: list[str] | None = None


class PImages(BaseModel):
    model_config = _STRICT
    prompt: Annotated[str, Field(min_length=1, max_length=32_000)]
    model: str | None = None
    n: Annotated[int, Field(ge=1, le=10)] | None = None
    size: Annotated[str, Field(pattern=r"^(auto|\d{2,5}x\d{2,5})$")] | None = None
    response_format: Literal["url", "b64_json"] | None = None
    output_format: Literal["png", "jpeg", "webp"] | None = None
    background: Literal["transparent", "opaque", "auto"] | None = None
    output_compression: Annotated[int, Field(ge=0, le=100)] | None = None
    quality: str | None = None
    style: str | None = None


def _ptext(most: int) -> Any:
    return Annotated[str, Field(max_length=most, pattern=r"^[^\x00]*$")] | None


class PMusic(BaseModel):
    model_config = _STRICT
    prompt: _ptext(5000) = None  # type: ignore[valid-type]
    gpt_description_prompt: _ptext(3000) = None  # type: ignore[valid-type]
    title: _ptext(200) = None  # type: ignore[valid-type]
    tags: _ptext(1000) = None  # type: ignore[valid-type]
    task: _ptext(40) = None  # type: ignore[valid-type]
    mv: _ptext(100) = None  # type: ignore[valid-type]
    make_instrumental: bool | None = None
    continue_at: Annotated[int, Field(ge=0, le=86_400)] | None = None
    continue_clip_id: Annotated[str, Field(pattern=_UUID)] | None = None


# --- the run --------------------------------------------------------------------------------


def _candidates(
    hand: Callable[[dict[str, Any]], None],
    m: type[msgspec.Struct],
    p: type[BaseModel],
    shape: Shape[Any] | None = None,
) -> dict[str, Callable[[bytes], object]]:
    decoder = msgspec.json.Decoder(m)
    adapter = TypeAdapter(p)
    loads = orjson.loads

    def run_hand(raw: bytes) -> object:
        payload = loads(raw)
        hand(payload)
        return payload

    def run_decode(raw: bytes) -> object:
        payload = loads(raw)
        decoder.decode(raw)
        return payload

    def run_convert(raw: bytes) -> object:
        payload = loads(raw)
        msgspec.convert(payload, m)
        return payload

    def run_pydantic(raw: bytes) -> object:
        payload = loads(raw)
        adapter.validate_python(payload)
        return payload

    def run_pydantic_json(raw: bytes) -> object:
        payload = loads(raw)
        adapter.validate_json(raw)
        return payload

    def run_shape(raw: bytes) -> object:
        payload = loads(raw)
        assert shape is not None
        shape.check(payload)
        return payload

    return {
        "hand": run_hand,
        "msgspec-decode": run_decode,
        "msgspec-convert": run_convert,
        "pydantic-python": run_pydantic,
        "pydantic-json": run_pydantic_json,
        **({"unigate": run_shape} if shape is not None else {}),
    }


def _time(fn: Callable[[bytes], object], raw: bytes, rounds: int) -> float:
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(rounds):
            fn(raw)
        runs.append((time.perf_counter() - started) / rounds * 1e6)
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    bodies = {
        "chat with tools": (CHAT, hand_chat, MChat, PChat, text.CHAT),
        "responses": (RESPONSES, hand_responses, MResponses, PResponses, responses.RESPONSE),
        "images": (IMAGES, hand_images, MImages, PImages, images.GENERATION),
        "music submit": (MUSIC, hand_music, MMusic, PMusic, music.SUBMIT),
    }
    print(f"msgspec {msgspec.__version__}, pydantic {pydantic.VERSION}; µs per body, fastest of 7 runs")
    names = list(_candidates(hand_chat, MChat, PChat, text.CHAT))
    print(f"{'body':<18}{'bytes':>7}" + "".join(f"{n:>17}" for n in names))
    for label, (body, hand, m, p, shape) in bodies.items():
        raw = orjson.dumps(body)
        candidates = _candidates(hand, m, p, shape)
        for fn in candidates.values():  # every candidate accepts the valid body
            fn(raw)
        figures = [_time(fn, raw, args.rounds) for fn in candidates.values()]
        print(f"{label:<18}{len(raw):>7}" + "".join(f"{f:>17.2f}" for f in figures))
    floor = _time(orjson.loads, orjson.dumps(CHAT), args.rounds)
    print(f"(orjson.loads of the chat body alone: {floor:.2f} µs)")


if __name__ == "__main__":
    main()
