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
# Where JSON Schema nests schemas: a map of them, a list of them, or one (`items` also a list).
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONE: Final = frozenset(
    {
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
    }
)


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


def json_schema_types(schema: Any) -> Any:
    """A JSON Schema with any type spelled as Gemini's enum (`OBJECT`) spelled as JSON Schema's
    (`object`), at every place JSON Schema nests a schema (a property named `type` is a name,
    not a type). The schema itself when it has none, as agents' tool schemas mostly do: most
    calls copy nothing."""
    if not isinstance(schema, dict):
        return schema
    changed: Json | None = None
    for key, value in schema.items():
        if key == "type":
            new = _types(value)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            new = _each(value)
        elif key in _SCHEMA_LISTS or (key in _SCHEMA_ONE and isinstance(value, list)):
            new = _all(value)
        elif key in _SCHEMA_ONE:
            new = json_schema_types(value)
        else:
            continue
        if new is not value:
            if changed is None:
                changed = dict(schema)
            changed[key] = new
    return schema if changed is None else changed


def _types(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower() if value in _ENUM_TYPES else value
    if isinstance(value, list) and any(isinstance(v, str) and v in _ENUM_TYPES for v in value):
        return [v.lower() if isinstance(v, str) and v in _ENUM_TYPES else v for v in value]
    return value


def _each(schemas: Json) -> Json:
    out = {name: json_schema_types(sub) for name, sub in schemas.items()}
    return schemas if all(out[name] is sub for name, sub in schemas.items()) else out


def _all(schemas: Any) -> Any:
    if not isinstance(schemas, list):
        return schemas
    out = [json_schema_types(sub) for sub in schemas]
    return schemas if all(new is old for new, old in zip(out, schemas, strict=True)) else out
