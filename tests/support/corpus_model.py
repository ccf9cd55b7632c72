"""The bad-input corpus's building blocks: an endpoint under test (`Target`), one named bad
request (`Case`), and the attacks every JSON or multipart endpoint gets.

A case's body is built only when it is sent (`make`), so the 20 MiB bodies exist one at a
time. Every case expects a 4xx in its family's error shape unless it names its statuses."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

MARK = "ZZMARKZZ"  # stands in for odd text, replaced at the byte level after encoding
OVER_LIMIT = 21 * 1024 * 1024  # over limits.max_json_body (20 MiB)
BOUNDARY = "corpusboundary7MA4YWxkTrZu0gW"
DELETE = object()  # set_path: remove the field

FilePart = tuple[str, str, bytes]  # filename, content type, data
FormPart = tuple[str, "str | bytes | FilePart"]


@dataclass(frozen=True)
class Target:
    """One endpoint: a valid request to derive bad ones from."""

    family: str  # for the figures
    style: str  # the error shape its clients parse
    path: str
    body: dict[str, Any]  # JSON body, or the form's text fields
    files: dict[str, FilePart] = field(default_factory=dict)
    form: bool = False  # takes multipart/form-data
    json_too: bool = False  # a form endpoint that also takes JSON
    text: str = "prompt"  # a string field (dotted path) that carries odd text
    required: str = "model"  # a field whose absence is a 400
    headers: tuple[tuple[str, str], ...] = ()
    method: str = "POST"
    label: str = ""  # how case ids name the endpoint; derived from the path when ""

    @property
    def short(self) -> str:
        if self.label:
            return self.label
        name = self.path.rsplit("/", 1)[-1].split(":")[-1] or self.path
        return name + ("+form" if self.form else "")


@dataclass(frozen=True)
class Case:
    name: str
    target: Target
    make: Callable[[], bytes]
    content_type: str | None
    headers: tuple[tuple[str, str], ...] = ()
    expect: frozenset[int] | None = None  # None: any 4xx
    path: str | None = None  # another path than the target's
    # A field only the upstream reads (the gateway passes it on): the sandbox may accept it,
    # so a 2xx is fine too; never a 5xx.
    upstream: bool = False
    # What the case needs on the gateway (gateway, API key) while it is sent: yields the
    # `{name}`s to fill in its path (ids of things it made), and undoes what it changed.
    around: Callable[[Any, str], AbstractContextManager[dict[str, str]]] | None = None

    @property
    def id(self) -> str:
        return f"{self.target.family}/{self.target.short}/{self.name}"


def set_path(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `body` with the dotted `path` (list indexes as numbers) set or deleted."""
    out = copy.deepcopy(body)
    node: Any = out
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    key: Any = int(last) if isinstance(node, list) else last
    if value is DELETE:
        node.pop(key, None)
    else:
        node[key] = value
    return out


def nested_schema(depth: int) -> dict[str, Any]:
    """A JSON schema about `depth` JSON levels deep (objects in objects' `properties`): deeper
    than the 255 levels orjson writes, shallower than the 1,024 it reads."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth // 2):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def dumps(body: Any) -> bytes:
    # Python's json, not orjson: it writes integers past 64 bits and 1e308 as given.
    return json.dumps(body).encode()


def with_text(body: dict[str, Any], path: str, raw: bytes) -> bytes:
    """`body` as JSON with the string at `path` replaced by raw bytes (already JSON-escaped
    or deliberately invalid)."""
    return dumps(set_path(body, path, MARK)).replace(MARK.encode(), raw)


def encode_form(parts: list[FormPart], boundary: str = BOUNDARY) -> bytes:
    out = bytearray()
    for name, value in parts:
        out += f"--{boundary}\r\n".encode()
        if isinstance(value, tuple):
            filename, ctype, data = value
            out += f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'.encode()
            out += f"Content-Type: {ctype}\r\n\r\n".encode() + data + b"\r\n"
        else:
            data = value.encode() if isinstance(value, str) else value
            out += f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out)


def form_parts(target: Target, fields: dict[str, Any] | None = None, files: bool = True) -> list[FormPart]:
    values = target.body if fields is None else fields
    parts: list[FormPart] = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in values.items()]
    if files:
        parts += list(target.files.items())
    return parts


FORM_CT = f"multipart/form-data; boundary={BOUNDARY}"
JSON_CT = "application/json"


def json_case(
    target: Target, name: str, make: Callable[[], bytes], ctype: str | None = JSON_CT, **kw: Any
) -> Case:
    return Case(name, target, make, ctype, target.headers, **kw)


FieldCase = tuple[Any, ...]  # (name, dotted field or "*" to merge a dict, value[, UPSTREAM])
UPSTREAM = "upstream"


def field_cases(target: Target, specific: list[FieldCase]) -> list[Case]:
    """Wrong types and out-of-range values: (name, dotted field, value), with UPSTREAM last
    for a field only the upstream judges."""
    out = []
    for name, path, value, *flags in specific:
        body = {**target.body, **value} if path == "*" else set_path(target.body, path, value)
        upstream = UPSTREAM in flags
        if target.form:
            parts = form_parts(target, body)
            make = lambda p=parts: encode_form(p)  # noqa: E731
            out.append(Case(name, target, make, FORM_CT, target.headers, upstream=upstream))
        else:
            out.append(json_case(target, name, lambda b=body: dumps(b), upstream=upstream))
    return out


def json_attacks(target: Target) -> list[Case]:
    """What every JSON endpoint gets: broken syntax and encodings, nesting, size, odd text,
    and the wrong body type."""
    body, text = target.body, target.text
    missing = set_path(body, target.required, DELETE)

    def case(name: str, make: Callable[[], bytes], ctype: str | None = JSON_CT, **kw: Any) -> Case:
        return json_case(target, name, make, ctype, **kw)

    cases = [
        case("not_json", lambda: b'{"model": '),
        case("empty_body", lambda: b""),
        case("top_level_array", lambda: b"[1, 2]"),
        case("top_level_null", lambda: b"null"),
        case("nested_arrays_10k", lambda: b"[" * 10_000 + b"]" * 10_000),
        case("nested_objects_10k", lambda: b'{"a":' * 10_000 + b"1" + b"}" * 10_000),
        case("non_utf8", lambda: b"\xff\xfe" + dumps(body)),
        case("latin1_text", lambda: with_text(body, text, "caf\u00e9 \u00fc".encode("latin-1"))),
        case("lone_surrogate_escape", lambda: with_text(body, text, b"a\\ud800b")),
        case("lone_surrogate_bytes", lambda: with_text(body, text, b"a\xed\xa0\x80b")),
        case("over_20_mib", lambda: with_text(body, text, b"x" * OVER_LIMIT), expect=frozenset({413})),
        case("json_as_text_plain_missing_field", lambda: dumps(missing), "text/plain"),
        case("no_content_type_missing_field", lambda: dumps(missing), None),
    ]
    if not target.json_too:
        cases.append(case("multipart_body", lambda: encode_form(form_parts(target)), FORM_CT))
    return cases


def form_attacks(target: Target) -> list[Case]:
    """What every multipart endpoint gets: broken framing, limits, and the wrong body type."""
    parts = form_parts(target)
    good = encode_form(parts)
    end = f"--{BOUNDARY}--\r\n"
    half = BOUNDARY[: len(BOUNDARY) // 2].encode()
    pad = "a" * 100_000
    big_header = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\nX-Pad: {pad}\r\n\r\nv\r\n'
    missing = [(k, v) for k, v in parts if k != target.required]

    def case(name: str, make: Callable[[], bytes], ctype: str | None = FORM_CT) -> Case:
        return Case(name, target, make, ctype, target.headers)

    cases = [
        case("no_boundary", lambda: good, "multipart/form-data"),
        case("boundary_mismatch", lambda: good, "multipart/form-data; boundary=other"),
        case("boundary_too_long", lambda: good, "multipart/form-data; boundary=" + "b" * 200),
        case("part_with_huge_headers", lambda: big_header.encode() + good),
        case("preamble_5_mib", lambda: b"\r\n" * (5 << 19) + encode_form(missing)),
        case("ten_thousand_parts", lambda: encode_form([("f", "v")] * 10_000)),
        case("unterminated", lambda: good[: -len(end)]),
        case("truncated_mid_part", lambda: good[: len(good) // 2]),
        case("half_boundary_lines", lambda: good.replace(BOUNDARY.encode(), half)),
        case("non_utf8_field", lambda: encode_form([*parts, ("x", b"\xff\xfe\xed\xa0\x80")])),
        case("missing_required", lambda: encode_form(missing)),
        case("form_as_text_plain", lambda: good, "text/plain"),
        case("form_without_content_type", lambda: good, None),
        case("empty_body", lambda: b""),
    ]
    if not target.json_too:
        cases.append(case("json_body", lambda: dumps(target.body), JSON_CT))
    if target.files:  # base64 text where a file part belongs
        as_text = form_parts(target, files=False) + [(n, "aGVsbG8=") for n in target.files]
        cases.append(case("files_as_text_fields", lambda: encode_form(as_text)))
    for name in target.files:
        junk: FilePart = (f"{name}.bin", "application/octet-stream", b"\x00junk" * 40)
        swapped = [(k, junk if k == name else v) for k, v in parts]
        cases.append(case(f"{name}_not_media", lambda p=swapped: encode_form(p)))
        # A latin-1 file name: refused, never stored with U+FFFD in it (music keeps names).
        sent_name = f'filename="{target.files[name][0]}"'.encode()
        latin1 = encode_form(parts).replace(sent_name, b'filename="caf\xe9.wav"')
        cases.append(case(f"{name}_name_not_utf8", lambda b=latin1: b))
    return cases
