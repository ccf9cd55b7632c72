"""The schemas of a Gemini request (a function's parameters, a JSON answer's shape) as the JSON
Schema the canonical (chat completions) form carries.

Gemini takes a schema two ways: as its own `Schema` object (`parameters`, `responseSchema`),
whose types are an enum written in capitals (`OBJECT`), and as JSON Schema
(`parametersJsonSchema`, `responseJsonSchema`), where Google also takes the enum's spellings:
Gemini CLI sends its JSON side calls' schemas so (`{"type": "OBJECT", ...}`, from the SDK's
`Type.OBJECT`). JSON Schema's types are lower case, and OpenAI refuses a schema with `OBJECT`
in it, so both come out with JSON Schema's spellings.
"""

from __future__ import annotations

from typing import Any, Final

from unigate.translate.gemini_fields import Json, as_list, as_object

# Gemini's type enum as JSON clients write it (`TYPE_UNSPECIFIED` has no JSON Schema type).
_ENUM_TYPES: Final = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
# Where JSON Schema nests schemas, by keyword: a map or list of them (`_MANY`), or one, which
# for `items` may also be a list (`_ONE`).
_MANY, _ONE = 0, 1
_NESTED: Final = {
    **dict.fromkeys(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"), _MANY),
    **dict.fromkeys(("anyOf", "oneOf", "allOf", "prefixItems"), _MANY),
    **dict.fromkeys(
        (
            "items",
            "additionalProperties",
            "additionalItems",
            "not",
            "if",
            "then",
            "else",
            "contains",
            "propertyNames",
            "unevaluatedProperties",
            "unevaluatedItems",
        ),
        _ONE,
    ),
}


def json_schema_of(schema: Json) -> Json:
    """A Gemini `Schema` as JSON Schema: types lower-cased (`OBJECT` -> `object`), `nullable`
    folded into the type."""
    out: Json = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out["type"] = [value.lower(), "null"] if schema.get("nullable") else value.lower()
        elif key == "properties":
            out[key] = {name: json_schema_of(as_object(sub)) for name, sub in as_object(value).items()}
        elif key == "items":
            out[key] = json_schema_of(as_object(value))
        elif key in ("anyOf", "any_of"):
            out["anyOf"] = [json_schema_of(as_object(sub)) for sub in as_list(value)]
        elif key not in ("nullable", "propertyOrdering", "property_ordering"):
            out[key] = value
    return out


def parameters_schema(schema: Json) -> Json:
    """A function's `parametersJsonSchema` for the chat form: looked through (`json_schema_types`)
    only when its root's type is spelled as Gemini's enum. A client writes a schema one way
    throughout (the enum comes from an SDK's `Type`), and an agent sends its twenty tools'
    schemas with every call: looked through each time, they cost ~14 µs of a ~290 µs call."""
    root = schema.get("type")
    return json_schema_types(schema) if _types(root) is not root else schema


def json_schema_types(schema: Any) -> Any:
    """A JSON Schema with any type spelled as Gemini's enum (`OBJECT`) spelled as JSON Schema's
    (`object`), at every place JSON Schema nests a schema (a property named `type` is a name,
    not a type). The schema itself when it has none: nothing is copied then."""
    if not isinstance(schema, dict):
        return schema
    changed: Json | None = None
    nested = _NESTED
    for key, value in schema.items():
        if key == "type":
            new = _types(value)
        else:
            kind = nested.get(key)
            if kind is None:
                continue
            many = kind == _MANY or isinstance(value, list)
            new = _within(value) if many else json_schema_types(value)
        if new is not value:
            if changed is None:
                changed = dict(schema)
            changed[key] = new
    return schema if changed is None else changed


def _types(value: Any) -> Any:
    if value.__class__ is str:
        return value.lower() if value in _ENUM_TYPES else value
    if isinstance(value, list) and any(v in _ENUM_TYPES for v in value if isinstance(v, str)):
        return [v.lower() if isinstance(v, str) and v in _ENUM_TYPES else v for v in value]
    return value


def _within(schemas: Any) -> Any:
    """A map (names to schemas) or a list of schemas, with theirs changed; itself when none
    changes."""
    pairs: Any
    if isinstance(schemas, dict):
        pairs = schemas.items()
    elif isinstance(schemas, list):
        pairs = enumerate(schemas)
    else:
        return schemas
    out: Any = None
    for at, sub in pairs:
        new = json_schema_types(sub)
        if new is not sub:
            if out is None:
                out = schemas.copy()
            out[at] = new
    return schemas if out is None else out
