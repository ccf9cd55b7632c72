"""Deterministic example values that satisfy a JSON Schema, flavoured by a hint text.

Used for tool-call arguments and `json_schema` response formats: the value must validate
against the schema the client sent, and should look related to what the user wrote (a
`city` argument takes a capitalised place name from the message, a `days` argument the
number written next to "days", ...). Unknown keywords are ignored and malformed schemas
never raise: the result is best effort, but it is always JSON-serialisable. A schema whose
minimum sizes would make the value huge (`minItems: 3000000`, or nested counts multiplying
up) is refused with a 400 instead: the sandbox does bounded work for a small request.

Supported: type (incl. lists and `nullable`), const, enum, properties/required/
additionalProperties/minProperties, items/prefixItems/minItems/maxItems/uniqueItems,
minLength/maxLength/pattern/format, minimum/maximum/exclusive bounds (draft 4 and 6+)/
multipleOf, anyOf/oneOf (first non-null branch), allOf (merged), local `$ref`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from unigate_sandbox.params import invalid_value
from unigate_sandbox.pattern_values import sample_for_pattern
from unigate_sandbox.schema_numbers import bounds, float_fits, int_fits, multiple_near, num
from unigate_sandbox.text_hints import Hints

Schema = Mapping[str, Any]

_MAX_DEPTH = 8  # beyond this only required properties and minimum item counts are generated
_MAX_REF_HOPS = 32
_GIVE_UP_DEPTH = 64
_SEARCH = 1000  # integers tried around the preferred one for a fractional multipleOf
# What one generated value may cost: a real model's structured output is bounded by its
# output tokens, far below these.
MAX_COUNT = 1000  # minItems / minProperties
MAX_LENGTH = 100_000  # minLength
MAX_VALUES = 5_000  # values in the whole document (nested counts multiply)
MAX_CHARS = 500_000  # characters of all strings together

# Fallback values for string formats the hint text does not supply.
_FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "date": "2024-01-15",
        "date-time": "2024-01-15T09:30:00Z",
        "time": "09:30:00Z",
        "duration": "P1D",
        "email": "user@example.com",
        "idn-email": "user@example.com",
        "hostname": "example.com",
        "idn-hostname": "example.com",
        "ipv4": "192.0.2.1",
        "ipv6": "2001:db8::1",
        "uri": "https://example.com/",
        "url": "https://example.com/",
        "iri": "https://example.com/",
        "uri-reference": "https://example.com/",
        "uri-template": "https://example.com/{id}",
        "json-pointer": "/value",
        "regex": ".*",
    }
)
# Strings tried, in order, when the natural candidate does not match a `pattern`.
_PATTERN_FALLBACKS = ("abc", "ABC", "Abc", "a1", "A1", "123", "1", "a", "x-1", "abc_def", "2024-01-15", "")
_BOUND_KEYS_MIN = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
_BOUND_KEYS_MAX = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})


class _TooLarge(Exception):
    pass


class Budget:
    """What one reply may still generate; one budget spans every value of a request (all its
    choices and tool calls), so many small schemas cannot add up to unbounded work."""

    __slots__ = ("chars", "values")

    def __init__(self) -> None:
        self.values = 0
        self.chars = 0


def example_value(
    schema: object, hint: str = "", param: str = "response_format", budget: Budget | None = None
) -> Any:
    """A value valid against `schema` (best effort), using words and numbers from `hint`;
    400 naming `param` when the schema asks for more than the sandbox generates."""
    root = schema if isinstance(schema, Mapping) else {}
    try:
        return _Generator(root, Hints(hint), budget or Budget()).value(root, "", 0, 0)
    except _TooLarge as exc:
        raise invalid_value(param, f"the schema asks for {exc}.") from None


def _at_most(s: Schema, key: str, limit: int) -> int:
    count = _count(s, key) or 0
    if count > limit:
        raise _TooLarge(f"{key} {count}, but the sandbox generates at most {limit}")
    return count


def _count(schema: Schema, key: str) -> int | None:
    value = schema.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _merge(base: Schema, extra: Schema) -> dict[str, Any]:
    """Both schemas as one (the intersection, approximately): allOf, $ref siblings, branches."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        if key == "properties" and isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = {**old, **value}
        elif key == "required" and isinstance(old, list) and isinstance(value, list):
            out[key] = old + [v for v in value if v not in old]
        elif key in _BOUND_KEYS_MIN and isinstance(old, int | float) and isinstance(value, int | float):
            out[key] = max(old, value)
        elif key in _BOUND_KEYS_MAX and isinstance(old, int | float) and isinstance(value, int | float):
            out[key] = min(old, value)
        elif key == "enum" and isinstance(old, list) and isinstance(value, list):
            both = [v for v in old if v in value]
            out[key] = both or value
        else:
            out[key] = value
    return out


def schema_type(schema: Schema) -> str:
    """The JSON type to generate: the first non-null declared type, else inferred."""
    declared = schema.get("type")
    if isinstance(declared, list):
        named = [t for t in declared if isinstance(t, str)]
        concrete = [t for t in named if t != "null"]
        return concrete[0] if concrete else ("null" if named else "string")
    if isinstance(declared, str):
        return declared
    if any(k in schema for k in ("properties", "required", "additionalProperties", "minProperties")):
        return "object"
    if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


class _Generator:
    def __init__(self, root: Schema, hints: Hints, budget: Budget) -> None:
        self.root = root
        self.hints = hints
        self.budget = budget

    def value(self, schema: object, name: str, depth: int, variant: int) -> Any:
        if depth > _GIVE_UP_DEPTH:
            return None  # a schema that requires infinite nesting has no finite example
        self.budget.values += 1
        if self.budget.values > MAX_VALUES:
            raise _TooLarge(f"more than {MAX_VALUES} values in all, which the sandbox does not generate")
        s = self.resolve(schema)
        if "const" in s:
            return s["const"]
        enum = s.get("enum")
        if isinstance(enum, list) and enum:
            return self.hints.pick(enum, name, variant)
        for key in ("anyOf", "oneOf"):
            branches = s.get(key)
            if isinstance(branches, list) and branches:
                rest = {k: v for k, v in s.items() if k != key}
                branch = self.resolve(_first_branch(branches))
                return self.value(_merge(rest, branch), name, depth + 1, variant)
        kind = schema_type(s)
        if kind == "object":
            return self.object(s, depth, variant)
        if kind == "array":
            return self.array(s, name, depth, variant)
        if kind == "integer":
            return self.integer(s, name, variant)
        if kind == "number":
            return self.number(s, name, variant)
        if kind == "boolean":
            return variant % 2 == 0
        if kind == "null":
            return None
        return self.string(s, name, variant)

    def resolve(self, schema: object) -> dict[str, Any]:
        """`schema` with local `$ref`s followed and `allOf` folded in."""
        s: dict[str, Any] = dict(schema) if isinstance(schema, Mapping) else {}
        for _ in range(_MAX_REF_HOPS):
            ref = s.get("$ref")
            if isinstance(ref, str):
                rest = {k: v for k, v in s.items() if k != "$ref"}
                s = _merge(self.lookup(ref), rest)
                continue
            parts = s.get("allOf")
            if isinstance(parts, list):
                base = {k: v for k, v in s.items() if k != "allOf"}
                for part in parts:
                    if isinstance(part, Mapping):
                        base = _merge(base, part)
                s = base
                continue
            break
        return s

    def lookup(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            return {}  # remote references cannot be fetched offline
        node: object = self.root
        for raw in ref[1:].split("/")[1:]:
            key = raw.replace("~1", "/").replace("~0", "~")
            node = node.get(key) if isinstance(node, Mapping) else None
        return dict(node) if isinstance(node, Mapping) else {}

    def object(self, s: Schema, depth: int, variant: int) -> dict[str, Any]:
        props = s.get("properties")
        props = props if isinstance(props, Mapping) else {}
        listed = s.get("required")
        required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
        extra = s.get("additionalProperties")
        extra_schema = extra if isinstance(extra, Mapping) else {}
        names = list(props) if depth < _MAX_DEPTH else [n for n in props if n in required]
        out: dict[str, Any] = {}
        for key in names:
            out[key] = self.value(props[key], key, depth + 1, variant)
        for key in required:
            if key not in out:
                out[key] = self.value(extra_schema, key, depth + 1, variant)
        wanted = _at_most(s, "minProperties", MAX_COUNT)
        while len(out) < wanted and extra is not False:
            key = f"extra_{len(out) + 1}"
            out[key] = self.value(extra_schema, key, depth + 1, variant)
        return out

    def array(self, s: Schema, name: str, depth: int, variant: int) -> list[Any]:
        items = s.get("items")
        prefix = s.get("prefixItems")
        if isinstance(items, list):  # draft 4 tuple form
            prefix, items = items, s.get("additionalItems")
        prefix = prefix if isinstance(prefix, list) else []
        low = _at_most(s, "minItems", MAX_COUNT)
        high = _count(s, "maxItems")
        want = max(low, len(prefix), 1)
        item_schema = self.resolve(items)
        if depth < _MAX_DEPTH and schema_type(item_schema) == "string" and "enum" not in item_schema:
            want = max(want, min(3, len(self.hints.keywords)))  # a list of the user's key words
        if depth >= _MAX_DEPTH:
            want = low
        if high is not None:
            want = min(want, high)
        if items is False:
            want = min(want, len(prefix))
        return [
            self.value(prefix[i] if i < len(prefix) else item_schema, name, depth + 1, variant + i)
            for i in range(want)
        ]

    def integer(self, s: Schema, name: str, variant: int) -> int:
        low, high = bounds(s, integral=True)
        step = num(s, "multipleOf")
        step = step if step is not None and step > 0 else None
        hint = self.hints.number_near(name)
        if hint is not None and hint == int(hint) and int_fits(int(hint), low, high, step):
            return int(hint)
        whole = int(step) if step is not None and step == int(step) else None
        base = int(low if low is not None else (min(high, 1) if high is not None else 1))
        base += variant * (whole or 1)
        if high is not None and base > high:
            base = int(high)
        if whole is not None:
            candidates: Iterable[int] = (-(-base // whole) * whole, (base // whole) * whole)
        else:  # no step, or a fractional one (0.5, 2.5): search near the base
            candidates = (base + sign * offset for offset in range(_SEARCH) for sign in (1, -1))
        return next((v for v in candidates if int_fits(v, low, high, step)), base)

    def number(self, s: Schema, name: str, variant: int) -> float | int:
        step = num(s, "multipleOf")
        if step is not None and step > 0 and step == int(step):
            return self.integer(s, name, variant)
        low, high = bounds(s, integral=False)
        hint = self.hints.number_near(name)
        if hint is not None and float_fits(hint, low, high, step):
            return hint
        if low is not None and high is not None:
            value = low + (high - low) / 2
        elif low is not None:
            value = low + 1 + variant
        elif high is not None:
            value = high - 1 - variant
        else:
            value = 1.5 + variant
        if step is not None and step > 0:
            value = multiple_near(low if low is not None else value - step, step)
        return value

    def string(self, s: Schema, name: str, variant: int) -> str:
        text = self._string(s, name, variant)
        self.budget.chars += len(text)
        if self.budget.chars > MAX_CHARS:
            raise _TooLarge(f"more than {MAX_CHARS} characters of text, which the sandbox does not generate")
        return text

    def _string(self, s: Schema, name: str, variant: int) -> str:
        _at_most(s, "minLength", MAX_LENGTH)
        fmt = s.get("format")
        text: str | None = None
        if isinstance(fmt, str):
            text = self.hints.formatted(fmt) or (_uuid(name, variant) if fmt == "uuid" else _FORMATS.get(fmt))
        if text is None:
            text = self.hints.text_for(name, variant)
        low, high = _count(s, "minLength") or 0, _count(s, "maxLength")
        pattern = s.get("pattern")
        compiled = _compile(pattern) if isinstance(pattern, str) else None
        if compiled is None:
            return _fit_length(text, low, high)
        candidates = [text, *self.hints.keywords, *_PATTERN_FALLBACKS]
        sample = sample_for_pattern(compiled.pattern)
        if sample is not None:
            candidates.insert(1, sample)
        for candidate in candidates:
            if not compiled.search(candidate):
                continue
            # Pad with a character the value already has, so "123" stays digits-only.
            for pad in dict.fromkeys([candidate[-1:] or "x", "x", "0", "a"]):
                fitted = _fit_length(candidate, low, high, pad)
                if compiled.search(fitted):
                    return fitted
        return _fit_length(text, low, high)


def _first_branch(branches: list[Any]) -> object:
    for branch in branches:
        if isinstance(branch, Mapping) and branch.get("type") != "null":
            return branch
    return branches[0]


def _uuid(name: str, variant: int) -> str:
    digest = hashlib.blake2b(f"{name}/{variant}".encode(), digest_size=16).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


def _compile(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # an ECMA-only construct: the natural candidate is kept


def _fit_length(text: str, low: int, high: int | None, pad: str = "x") -> str:
    if len(text) < low:
        text += pad * (low - len(text))
    return text[:high] if high is not None else text
