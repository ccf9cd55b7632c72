"""The mechanism: a request body declared as a msgspec `Struct`, checked with `Shape.check` (a
JSON body's decoded object) or `Shape.check_form` (a multipart form), and described in
`/openapi.json` from the same declaration (`components`).

msgspec was chosen over pydantic v2 and over the hand-written checks by what each costs on the
request path (`bench/shapes.py`): `msgspec.convert` of the already-decoded body is the cheapest
of the three on every representative body. The router keeps the decoded dict it always had (a
same-format relay still forwards the client's bytes, untouched); the check only reads it.

A declaration states what the gateway itself reads: fields it does not declare are relayed to
the upstream as sent (`Body`), except where the gateway refuses unknown fields (`ClosedBody`).
Field metadata (`msgspec.Meta`) carries the bounds and the description; `extra={"expected":
...}` rewords the "expected ..." of a refusal where the type alone would say it badly. What a
declaration cannot express (a file's content, a rule across fields) is checked in the Struct's
`__post_init__`, raising `InvalidRequest` with the field it names, or in the router.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from unigate.edge.multipart import Form
from unigate.shapes.form_text import from_text
from unigate.shapes.refusal import OPENAI, Upload, Wording, is_upload, refusal

Schema = dict[str, Any]
REF = "#/components/schemas/{name}"


class Body(msgspec.Struct, kw_only=True):
    """A request body: keyword-only fields; fields it does not declare are ignored here and
    relayed (the docstring of a subclass is its schema's description)."""


class ClosedBody(Body, kw_only=True, forbid_unknown_fields=True):
    """A request body whose unknown fields are refused (the admin API)."""


B = TypeVar("B", bound=Body, covariant=True)


def _upload_schema(kind: type) -> Schema:
    if kind is Upload:
        return {"type": "string", "format": "binary"}
    raise NotImplementedError(kind)


class Shape(Generic[B]):
    """One declared body: the check the router calls and the component its operation's schema
    refers to (named after the Struct). `patch` adds to the generated component what a
    declaration cannot say (each caller says which); `lax` reads a JSON body's numbers and
    booleans from their text spellings too, as the forms' fields always are."""

    def __init__(
        self,
        kind: type[B],
        wording: Wording = OPENAI,
        *,
        patch: Callable[[Schema], None] | None = None,
        lax: bool = False,
    ) -> None:
        self.kind = kind
        self.wording = wording
        self.patch = patch
        self.lax = lax
        info = msgspec.inspect.type_info(kind)
        assert isinstance(info, msgspec.inspect.StructType)
        self._lists = frozenset(f.encode_name for f in info.fields if _is_list(f.type))
        self._files = frozenset(f.encode_name for f in info.fields if is_upload(f.type))
        # A form's parser files `name[]` under `name`: the declared name is the one clients send.
        self._names = {f.encode_name.removesuffix("[]"): f.encode_name for f in info.fields}
        self._types = {f.encode_name: f.type for f in info.fields}

    @property
    def name(self) -> str:
        return self.kind.__name__

    def ref(self) -> Schema:
        return {"$ref": REF.format(name=self.name)}

    def check(self, payload: Mapping[str, Any]) -> B:
        """The JSON body, checked: the typed value, or `InvalidRequest` naming the field."""
        if self.lax:
            payload = self._from_text(payload)
        try:
            return msgspec.convert(payload, self.kind)
        except msgspec.ValidationError as exc:
            raise refusal(exc, self.kind, payload, self.wording) from None

    def _from_text(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        types = self._types
        return {k: from_text(v, types[k]) if k in types else v for k, v in payload.items()}

    def check_form(self, form: Form, payload: Mapping[str, Any] | None = None) -> B:
        """A multipart form, checked: its text fields read from their text spellings (`n=2`,
        `stream=true`; an empty field is its default), its declared files as uploads. A text
        field where a file is declared is refused, not ignored."""
        values: dict[str, Any] = {}
        for sent, value in (payload if payload is not None else form_payload(form)).items():
            name = self._names.get(sent, sent)
            if value == "" or value == []:
                continue  # an empty form field means the default
            if name in self._lists and not isinstance(value, list):
                value = [value]  # one value of an array field sent without `[]`
            values[name] = value
        for name in self._files:
            uploads = [Upload(u) for u in form.files.get(name.removesuffix("[]"), ())]
            if name in values:  # sent as text, where a file is declared
                raise self.wording.refuse("type", name, "a file part (with a filename), not a text field")
            if uploads:
                values[name] = uploads if name in self._lists else uploads[0]
        values = self._from_text(values)
        try:
            return msgspec.convert(values, self.kind)
        except msgspec.ValidationError as exc:
            raise refusal(exc, self.kind, values, self.wording) from None


def form_payload(form: Form) -> dict[str, Any]:
    """The form's text fields as one mapping: first value, or the list for array fields."""
    out: dict[str, Any] = {}
    for name, values in form.fields.items():
        out[name] = values if len(values) > 1 or _sent_as_array(form, name) else values[0]
    return out


def _sent_as_array(form: Form, key: str) -> bool:
    return any(name == key + "[]" for name, _ in form.parts)


def components(shapes: Iterable[Shape[Any]], forms: Iterable[Shape[Any]] = ()) -> dict[str, Schema]:
    """The schemas of these declarations and of the Structs they hold, by Struct name, as
    `/openapi.json` lists them under `components/schemas`. The ones in `forms` describe a
    multipart form, whose fields cannot be null (an absent field is the default)."""
    listed = {shape.kind: shape for shape in shapes}
    if sys.flags.optimize >= 2:
        _docstrings_back(Body)
    _, found = msgspec.json.schema_components(list(listed), schema_hook=_upload_schema, ref_template=REF)
    for schema in found.values():
        schema.pop("title", None)  # the component's name says it
        if "description" in schema:  # a docstring, indented as source
            schema["description"] = " ".join(schema["description"].split())
    for shape in forms:
        schema = found[shape.name]
        required = set(schema.get("required", ()))
        for name, prop in schema["properties"].items():
            prop = _not_null(prop)
            schema["properties"][name] = prop if name in required else _blank_allowed(prop)
    for kind, shape in listed.items():
        if shape.patch is not None:
            shape.patch(found[kind.__name__])
    return found


def _docstrings_back(kind: type) -> None:
    """Give `kind` and its subclasses the docstrings their source has: `unigate serve` runs its
    workers under `python -OO`, which leaves docstrings out, and a declaration's docstring is
    its schema's description."""
    import ast
    import inspect
    import textwrap

    sub: type
    for sub in kind.__subclasses__():
        if sub.__doc__ is None:
            try:
                node = ast.parse(textwrap.dedent(inspect.getsource(sub))).body[0]
            except (OSError, TypeError, SyntaxError, IndexError):
                node = None
            if isinstance(node, ast.ClassDef):
                sub.__doc__ = ast.get_docstring(node)
        _docstrings_back(sub)


def _not_null(prop: Schema) -> Schema:
    members = [m for m in prop.get("anyOf", ()) if m != {"type": "null"}]
    if "anyOf" not in prop or len(members) == len(prop["anyOf"]):
        return prop
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**rest, **members[0]} if len(members) == 1 else {**rest, "anyOf": members}


def _blank_allowed(prop: Schema) -> Schema:
    """An optional form field may be sent empty, meaning its default."""
    if "" in prop.get("enum", ()) or prop.get("format") == "binary" or prop.get("type") == "array":
        return prop
    rest = {k: v for k, v in prop.items() if k != "description"}
    described = {"description": prop["description"]} if "description" in prop else {}
    return {**described, "anyOf": [rest, {"const": ""}]}


def _is_list(info: msgspec.inspect.Type) -> bool:
    info = _unwrap(info)
    if isinstance(info, msgspec.inspect.UnionType):
        return any(_is_list(t) for t in info.types)
    return isinstance(info, msgspec.inspect.ListType)


def _unwrap(info: msgspec.inspect.Type) -> msgspec.inspect.Type:
    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    return info
