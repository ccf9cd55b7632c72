"""The small vocabulary the family modules describe their operations with: JSON Schema
builders, request bodies, responses and the `Operation` record the builder joins with the
endpoint table.

What an operation declares here is only what the endpoint table cannot say itself: bodies,
query and header parameters, success responses. Path parameters, security and error
responses come from the `Endpoint` (its path, `param` regex, auth kind and error style), so
they cannot drift from what the server does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unigate.shapes.declare import Shape

Schema = dict[str, Any]

JSON = "application/json"
SSE = "text/event-stream"
MULTIPART = "multipart/form-data"
FORM = "application/x-www-form-urlencoded"


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def string(description: str = "", **keywords: Any) -> Schema:
    return _with({"type": "string", **keywords}, description)


def text(max_length: int | None = None, description: str = "", *, nullable: bool = True) -> Schema:
    """An optional string field that is absent when null (the gateway's `optional_text`)."""
    schema: Schema = {"type": ["string", "null"] if nullable else "string"}
    if max_length is not None:
        schema["maxLength"] = max_length
    return _with(schema, description)


def required_text(max_length: int | None = None, description: str = "") -> Schema:
    """A required, non-empty string (the gateway's `required_text`: "" counts as missing)."""
    schema: Schema = {"type": "string", "minLength": 1}
    if max_length is not None:
        schema["maxLength"] = max_length
    return _with(schema, description)


def integer(
    minimum: int | None = None, maximum: int | None = None, description: str = "", **kw: Any
) -> Schema:
    return _with(_bounded({"type": "integer", **kw}, minimum, maximum), description)


def number(
    minimum: float | None = None, maximum: float | None = None, description: str = "", **kw: Any
) -> Schema:
    return _with(_bounded({"type": "number", **kw}, minimum, maximum), description)


def boolean(description: str = "") -> Schema:
    return _with({"type": "boolean"}, description)


def nullable(schema: Schema) -> Schema:
    """`schema` or null: the gateway treats a null optional field as absent."""
    return {"anyOf": [schema, {"type": "null"}]}


def nullable_type(kind: str, **keywords: object) -> Schema:
    """A JSON type or null, written as a type list (`{"type": [kind, "null"]}`): what an
    answer's field may hold, unlike `nullable`, which says what a request may send."""
    return {"type": [kind, "null"], **keywords}


def enum(*values: Any, description: str = "") -> Schema:
    return _with({"enum": list(values)}, description)


def const(value: Any, description: str = "") -> Schema:
    return _with({"const": value}, description)


def array(items: Schema, description: str = "", **keywords: Any) -> Schema:
    return _with({"type": "array", "items": items, **keywords}, description)


def obj(
    properties: Mapping[str, Schema],
    required: Iterable[str] = (),
    description: str = "",
    *,
    closed: bool = False,
    nullable: bool = False,
    **keywords: Any,
) -> Schema:
    """An object (or null, which the gateway reads as absent, when `nullable`). `closed` only
    where the gateway refuses unknown fields (the admin API)."""
    kind: str | list[str] = ["object", "null"] if nullable else "object"
    schema: Schema = {"type": kind, "properties": dict(properties), **keywords}
    names = list(required)
    if names:
        schema["required"] = names
    if closed:
        schema["additionalProperties"] = False
    return _with(schema, description)


def any_of(*schemas: Schema, description: str = "") -> Schema:
    return _with({"anyOf": list(schemas)}, description)


def binary(description: str = "") -> Schema:
    """A file part of a multipart body."""
    return _with({"type": "string", "format": "binary"}, description)


def _bounded(schema: Schema, minimum: float | None, maximum: float | None) -> Schema:
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _with(schema: Schema, description: str) -> Schema:
    if description:
        schema["description"] = description
    return schema


# --- bodies, parameters and responses -----------------------------------------------------


def body(
    content: Mapping[str, Schema], description: str = "", *, examples: Mapping[str, Any] | None = None
) -> Schema:
    """A request body: media type -> schema; `examples`: media type -> a valid example (sent
    as is by tools such as Swagger UI's "Try it out" and schemathesis)."""
    media = {t: {"schema": s} for t, s in content.items()}
    for media_type, example in (examples or {}).items():
        media[media_type]["example"] = example
    return _with({"required": True, "content": media}, description)


@dataclass(frozen=True, eq=False)
class Declared:
    """A request body whose schemas are generated from the declarations the router checks
    with (`unigate.shapes`): media type -> `Shape`; `examples`: media type -> a valid example."""

    content: Mapping[str, Shape[Any]]
    examples: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def schema(self) -> Schema:
        return body({t: s.ref() for t, s in self.content.items()}, self.description, examples=self.examples)


def declared_json(shape: Shape[Any], example: Any = None, description: str = "") -> Declared:
    return Declared({JSON: shape}, {JSON: example} if example is not None else {}, description)


def declared_form(shape: Shape[Any], example: Any = None, description: str = "") -> Declared:
    return Declared({MULTIPART: shape}, {MULTIPART: example} if example is not None else {}, description)


def json_body(schema: Schema, example: Any = None, description: str = "") -> Schema:
    return body({JSON: schema}, description, examples={JSON: example} if example is not None else None)


def multipart_body(schema: Schema, example: Any = None, description: str = "") -> Schema:
    return body(
        {MULTIPART: schema}, description, examples={MULTIPART: example} if example is not None else None
    )


def query(name: str, schema: Schema, description: str = "", *, required: bool = False) -> Schema:
    return _with({"name": name, "in": "query", "required": required, "schema": schema}, description)


def header(name: str, schema: Schema, description: str = "", *, required: bool = False) -> Schema:
    return _with({"name": name, "in": "header", "required": required, "schema": schema}, description)


def deleted(object_name: str) -> Schema:
    """What a DELETE of a stored object answers: `{"id", "object": object_name, "deleted": true}`."""
    return obj(
        {"id": string(), "object": const(object_name), "deleted": const(True)},
        ["id", "object", "deleted"],
    )


def choice(values: tuple[str, ...] | frozenset[str], description: str = "") -> Schema:
    """An optional choice: absent, null or "" mean the default."""
    found: Schema = {"enum": [*sorted(values), "", None]}
    if description:
        found["description"] = description
    return found


def page_parameters(what: str, most: int, default: int) -> tuple[Schema, ...]:
    """The `after` / `limit` / `order` query of a list in OpenAI's cursor style."""
    return (
        query("after", string(), f"The page after this {what} id."),
        query("limit", any_of(integer(1, most), const("")), f"1 to {most} (default {default})."),
        query("order", choice(("asc", "desc")), "desc (default) or asc by creation."),
    )


def response(
    description: str, content: Mapping[str, Schema] | None = None, headers: Mapping[str, Schema] | None = None
) -> Schema:
    """A response: media type -> schema; `headers`: name -> header object."""
    found: Schema = {"description": description}
    if content:
        found["content"] = {t: {"schema": s} for t, s in content.items()}
    if headers:
        found["headers"] = dict(headers)
    return found


def json_response(description: str, schema: Schema, headers: Mapping[str, Schema] | None = None) -> Schema:
    return response(description, {JSON: schema}, headers)


def response_header(description: str, schema: Schema | None = None, *, required: bool = False) -> Schema:
    return {"description": description, "required": required, "schema": schema or {"type": "string"}}


def dropped_fields() -> dict[str, Schema]:
    """The header a translated route's answer names what it could not honour with."""
    return {
        "x-unigate-dropped-fields": response_header(
            "Request fields, content blocks and tools this route could not honour (a route that translates "
            "to another vendor's API), comma-separated; absent when nothing was dropped."
        )
    }


def link(operation_id: str, description: str = "", **parameters: str) -> Schema:
    """An OpenAPI link: the operation the answer's ids feed, its parameters as runtime
    expressions (`$response.body#/id`) or constants."""
    return _with({"operationId": operation_id, "parameters": parameters}, description)


def redirect() -> Schema:
    """A 302 to a public upstream link (the client follows it; the gateway's bandwidth is not
    spent on it)."""
    return response(
        "A public upstream link.", headers={"location": response_header("The file.", required=True)}
    )


def json_text(schema: Schema) -> Schema:
    """A string holding JSON that matches `schema` (an SSE event's `data`)."""
    return {"type": "string", "contentMediaType": JSON, "contentSchema": schema}


def sse_event(data: Schema, description: str = "", event: Schema | None = None) -> Schema:
    """One server-sent event: in OpenAPI 3.1 the schema of a `text/event-stream` describes each
    event of the stream (`data`, and `event` where the stream names its events). Comments and
    blank keep-alive lines are no events."""
    props: dict[str, Schema] = {"data": data}
    if event is not None:
        props["event"] = event
    return obj(props, ["data"], description)


@dataclass(frozen=True, eq=False)
class Operation:
    """What the document says about one (method, path) of the endpoint table, beyond what the
    endpoint itself declares."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    responses: dict[str, Schema]  # the success (and other non-error) responses by status
    # The request body: `Declared` (generated from what the router checks); a hand-written
    # schema only for a body no declaration covers yet (tests/unit/test_openapi.py lists them).
    request: Declared | Schema | None = None
    parameters: tuple[Schema, ...] = ()  # query and header parameters
    path_schemas: dict[str, Schema] = field(default_factory=dict)  # narrower than the table's regex
    path_examples: dict[str, str] = field(default_factory=dict)  # e.g. a model id that exists
    description: str = ""
    deprecated: bool = False
    # Paths shared by several client formats answer errors in the caller's shape (GET
    # /v1/models): the error schema then replaces the endpoint style's.
    error_schema: Schema | None = None
    # Header forms accepted beyond the style's own (security scheme names).
    extra_auth: tuple[str, ...] = ()
    # OpenAPI links of the success response: where its ids are used next (link name -> link).
    links: dict[str, Schema] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path
