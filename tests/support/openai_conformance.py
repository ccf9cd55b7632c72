"""Checks answers against OpenAI's own published API description.

The description is vendored, trimmed to the operations the gateway serves in OpenAI's shape
(`tests/fixtures/openai-openapi/`, cut by `openai_spec_trim.py`). A body is validated with a
JSON Schema (2020-12) validator against the schema the description gives for the operation,
status and content type, its `$ref`s resolved within the document; each event of a stream
against the operation's `text/event-stream` schema; an error body against `ErrorResponse`.

Where the description itself disagrees with OpenAI's API as served (and as OpenAI's SDK reads
it), the difference is listed here, once, with its reason: `QUIRKS` (a validator finding that
is the description's, not the answer's), `UNDESCRIBED_STREAMS` (streams the description
forgets), `IN_BAND_ERRORS` (the error event ending a broken stream) and `NULLABLE` (an OpenAPI
3.0 keyword left in a 3.1 document). Nothing the gateway makes goes there: a gateway deviation
is fixed, not listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import jsonschema_rs
import orjson

from tests.support.in_process import InProcessGateway

SPEC_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "openai-openapi" / "openai-trimmed.json"
_SCHEMAS = "#/components/schemas/"
Json = dict[str, Any]
_RESPONSES = r"(POST|GET) /responses(/\{response_id\}(/cancel)?)?"


@dataclass(frozen=True, slots=True)
class Quirk:
    operation: str  # regex on "METHOD /template" ("POST /responses")
    where: str  # regex on the place in the body ("data/0/embedding"), or "content-type"
    message: str  # regex searched in the validator's message (or the content type)
    reason: str
    in_stream: bool = False  # only in a stream's events


QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        "POST /embeddings",
        r"data/\d+/embedding",
        r'^"[A-Za-z0-9+/=]*" is not of type "array"$',
        "`Embedding.embedding` is typed as an array of numbers only; with the documented "
        "`encoding_format: base64` OpenAI sends the vector as a base64 string.",
    ),
    Quirk(
        "POST /audio/(transcriptions|translations)",
        "",
        r"is valid under more than one of the schemas listed in the 'oneOf' keyword$",
        "The `oneOf` of the json and verbose_json bodies is not exclusive: the json body only "
        "requires `text`, so every verbose_json body is valid under both (it was checked against "
        "each branch).",
    ),
    Quirk(
        _RESPONSES,
        r"(response/)?user",
        r'^null is not of type "string"$',
        '`Response.user` is typed as a string, but OpenAI sends `"user": null` when the request '
        "named none (as the description's own examples of Response objects show; the SDK types it "
        "Optional).",
    ),
    Quirk(
        _RESPONSES,
        r"(response/)?usage",
        r'^null is not of type "object"$',
        '`Response.usage` is typed as an object, but OpenAI sends `"usage": null` until a '
        "response has finished (queued, in progress, cancelled before an answer), as the "
        "description's own examples of `response.created` and `response.in_progress` show.",
    ),
    Quirk(
        "POST /completions",
        r"choices/\d+/finish_reason",
        r"^null is not ",
        "A streamed completion's chunks are completion objects (see UNDESCRIBED_STREAMS), whose "
        "`finish_reason` is typed non-null; OpenAI sends null until the choice's last chunk, as "
        "for chat chunks (where the description allows it).",
        in_stream=True,
    ),
    Quirk(
        "GET /videos/{video_id}/content",
        "content-type",
        r"^image/jpeg$",
        "Downloads are described as video/mp4, image/webp or JSON, but the documented `variant: "
        "spritesheet` is a JPEG (the thumbnail is the WebP), which the SDK reads as binary.",
    ),
    Quirk(
        "POST /audio/speech",
        "content-type",
        r"^audio/(mpeg|ogg|aac|flac|wav|pcm)$",
        "Speech audio is described as application/octet-stream; OpenAI sends the audio's own type "
        "(audio/mpeg for mp3, audio/ogg for opus, ...), which the SDK reads as binary all the same.",
    ),
)
# Operations whose documented request parameters ask for a stream (`stream: true`,
# `?stream=true`) while the description lists no text/event-stream answer: OpenAI streams
# events of these schemas.
UNDESCRIBED_STREAMS: dict[str, str] = {
    "POST /completions": "CreateCompletionResponse",  # each chunk is a completion object
    "GET /responses/{response_id}": "ResponseStreamEvent",  # a background response's replay
}
# A stream the upstream broke off ends with `data: {"error": {...}}`: OpenAI sends errors in band
# that way and its SDK raises on them, but the description's chunk schema does not list that
# event, so in these streams it is checked against `ErrorResponse` instead.
IN_BAND_ERRORS = frozenset({"POST /chat/completions", "POST /completions"})
# `nullable: true` is OpenAPI 3.0's keyword, ignored by the JSON Schema of a 3.1 document, yet
# left on a few fields (chat chunks' `finish_reason` and `logprobs`, ...). Its authors mean
# "or null", the SDK types those fields Optional and OpenAI sends null there, so it is read so.
NULLABLE = "nullable"


@dataclass(frozen=True, slots=True)
class Violation:
    operation: str
    where: str
    message: str
    event: str = ""  # "event 3 (response.completed)" for a stream's event

    def __str__(self) -> str:
        shown = self.message if len(self.message) < 400 else self.message[:300] + " ... " + self.message[-90:]
        return f"{self.operation} {self.event} at /{self.where}: {shown}".replace("  ", " ")


def _allowed(v: Violation) -> bool:
    return any(
        re.fullmatch(q.operation, v.operation)
        and re.fullmatch(q.where, v.where)
        and re.search(q.message, v.message)
        and (bool(v.event) or not q.in_stream)
        for q in QUIRKS
    )


class OpenAISpec:
    def __init__(self, path: Path = SPEC_FILE) -> None:
        document = orjson.loads(path.read_bytes())
        self.source: str = document["info"]["x-source"]
        self.paths: dict[str, Any] = document["paths"]
        self.components: dict[str, Any] = {"schemas": _with_nullable(document["components"]["schemas"])}
        self._templates = [
            (re.compile("^" + re.sub(r"\{[a-z_]+\}", "[^/]+", p) + "$"), p) for p in self.paths
        ]

    def operation(self, method: str, path: str) -> str:
        """`METHOD /template` of the published operation a gateway path (`/v1/...`) is."""
        bare = path.split("?", 1)[0].removeprefix("/v1")
        for regex, template in self._templates:
            if regex.match(bare) and method.lower() in self.paths[template]:
                return f"{method.upper()} {template}"
        raise KeyError(f"the description has no {method} {bare}")

    def check_body(
        self, method: str, path: str, status: int, content_type: str, body: bytes
    ) -> list[Violation]:
        """Everything in one answer the description does not allow, quirks left out."""
        operation = self.operation(method, path)
        if status >= 400:
            return self.check_error(operation, body)
        media = content_type.split(";", 1)[0].strip().lower()
        verb, template = operation.split(" ", 1)
        described = self.paths[template][verb.lower()]["responses"].get(str(status)) or {}
        content = dict(described.get("content") or {})
        if operation in UNDESCRIBED_STREAMS:
            content.setdefault("text/event-stream", {"schema": _ref(UNDESCRIBED_STREAMS[operation])})
        if not content:
            return []  # the description says nothing of this answer's body
        if media not in content:
            if _allowed(Violation(operation, "content-type", media)):
                return []
            return [Violation(operation, "content-type", f"{media} is not described ({sorted(content)})")]
        schema = content[media].get("schema") or {}
        if media == "text/event-stream":
            return self.check_events(operation, schema, body)
        if media != "application/json":
            return []  # binary content: nothing inside to validate
        return self.check_value(operation, schema, orjson.loads(body))

    def check_error(self, operation: str, body: bytes) -> list[Violation]:
        """The description gives error bodies for a few operations only, and there as the bare
        `Error`; OpenAI answers every error as `{"error": Error}` (`ErrorResponse`), which is
        what its SDK parses, so every error answer is checked against that."""
        return self.check_value(operation, _ref("ErrorResponse"), orjson.loads(body))

    def check_events(self, operation: str, schema: dict[str, Any], body: bytes) -> list[Violation]:
        found: list[Violation] = []
        events = sse_events(body)
        if not events:
            found.append(Violation(operation, "", "a stream without events"))
        for i, (name, data) in enumerate(events):
            if data == "[DONE]":
                continue
            value = orjson.loads(data)
            label = f"event {i} ({_kind(value)})"
            if name is not None and isinstance(value, dict) and value.get("type") not in (None, name):
                found.append(Violation(operation, "type", f"the event is named {name}", label))
            in_band = operation in IN_BAND_ERRORS and isinstance(value, dict) and "error" in value
            found += self.check_value(operation, _ref("ErrorResponse") if in_band else schema, value, label)
        return found

    def check_value(
        self, operation: str, schema: dict[str, Any], value: Any, event: str = ""
    ) -> list[Violation]:
        schema = self._narrow(schema, value)
        found = [
            Violation(operation, "/".join(str(p) for p in e.instance_path), e.message, event)
            for e in self._validator(orjson.dumps(schema)).iter_errors(value)
        ]
        return [v for v in found if not _allowed(v)]

    def _validator(self, schema: bytes) -> jsonschema_rs.Validator:
        return _compiled(self, schema)

    def _narrow(self, schema: dict[str, Any], value: Any) -> dict[str, Any]:
        """The branch of a union that `value`'s `type` names, so an invalid stream event is
        reported field by field rather than as "valid under none of 60 schemas"."""
        while isinstance(value, dict) and isinstance(value.get("type"), str):
            target = self._resolve(schema)
            branches = target.get("anyOf") or target.get("oneOf")
            if not branches:
                return schema
            typed = [b for b in branches if value["type"] in _type_names(self._resolve(b))]
            if len(typed) != 1:
                return schema
            schema = typed[0]
        return schema

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema and schema["$ref"].startswith(_SCHEMAS):
            schema = self.components["schemas"][schema["$ref"][len(_SCHEMAS) :]]
        return schema


@cache
def _compiled(spec: OpenAISpec, schema: bytes) -> jsonschema_rs.Validator:
    """A validator for `schema` with the description's components beside it, so every
    `#/components/schemas/...` reference resolves (compiled once per schema)."""
    return jsonschema_rs.Draft202012Validator({**orjson.loads(schema), "components": spec.components})


def _with_nullable(node: Any, in_properties: bool = False) -> Any:
    """`node` with each `nullable: true` schema turned into "that schema, or null" (NULLABLE)."""
    if isinstance(node, list):
        return [_with_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _with_nullable(v, k == "properties" and not in_properties) for k, v in node.items()}
    if not in_properties and out.get(NULLABLE) is True:
        del out[NULLABLE]
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _SCHEMAS + name}


def _type_names(schema: dict[str, Any]) -> list[str]:
    kind = (schema.get("properties") or {}).get("type") or {}
    return list(kind.get("enum") or ([kind["const"]] if "const" in kind else []))


def _kind(value: Any) -> str:
    return str(value.get("type") or value.get("object") or "") if isinstance(value, dict) else ""


@cache
def spec() -> OpenAISpec:
    return OpenAISpec()


def sse_events(body: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of each event of a text/event-stream body; comments skipped."""
    events = []
    for block in re.split(r"\r?\n\r?\n", body.decode()):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events


# A function tool in each API's spelling, for calls that should come back with a tool call.
CHAT_TOOLS: list[Json] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
RESPONSES_TOOLS: list[Json] = [{"type": "function", **CHAT_TOOLS[0]["function"]}]


class Checked:
    """Calls through the gateway, each answer checked against the description as it arrives."""

    def __init__(self, gw: InProcessGateway, key: str) -> None:
        self.gw, self.key = gw, key
        self.violations: list[Violation] = []

    def call(self, method: str, path: str, status: int = 200, **kwargs: Any) -> httpx2.Response:
        res = self.gw.request(method, path, self.key, **kwargs)
        assert res.status_code == status, (method, path, res.status_code, res.text[:500])
        content_type = res.headers.get("content-type", "")
        self.violations += spec().check_body(method, path, res.status_code, content_type, res.content)
        return res

    def post(self, path: str, body: Json, status: int = 200) -> httpx2.Response:
        return self.call("POST", path, status, json=body)

    def events(self, res: httpx2.Response) -> list[Json]:
        return [orjson.loads(data) for _, data in sse_events(res.content) if data != "[DONE]"]

    def clean(self) -> None:
        found = sorted({str(v) for v in self.violations})
        assert not found, f"{len(found)} deviations from {spec().source}:\n" + "\n".join(found)
