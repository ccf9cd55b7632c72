"""A msgspec validation error turned into the gateway's 400: the offending field as `param`
(`messages[0].role`), and a message saying what was expected, worded from the declaration
itself (the field's type and bounds, or its `Meta(extra={"expected": ...})`), so the words
cannot drift from the rule either. Each family words it its own way (`Wording`); the edge
renders it in the family's error shape."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import inspect as mi

from unigate.edge.multipart import UploadedFile
from unigate.errors import InvalidRequest


class Upload:
    """A file part of a multipart form, as a declared field's value (`Shape.check_form`)."""

    __slots__ = ("file",)

    def __init__(self, file: UploadedFile) -> None:
        self.file = file


_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.((?:[^.\[]|\[\])+)|\[(\d+|\.\.\.)\]")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")


@dataclass(frozen=True)
class Wording:
    """How a family words a refusal. `{param}` and `{expected}` are filled in."""

    wrong_type: str
    wrong_value: str
    missing: str
    missing_file: str
    unknown: str
    type_code: str
    value_code: str
    missing_code: str
    unknown_code: str

    def refuse(self, kind: str, param: str, expected: str = "") -> InvalidRequest:
        template, code = {
            "type": (self.wrong_type, self.type_code),
            "value": (self.wrong_value, self.value_code),
            "missing": (self.missing, self.missing_code),
            "missing_file": (self.missing_file, self.missing_code),
            "unknown": (self.unknown, self.unknown_code),
        }[kind]
        return InvalidRequest(template.format(param=param, expected=expected), param=param, code=code)


OPENAI = Wording(
    wrong_type="Invalid type for '{param}': expected {expected}.",
    wrong_value="Invalid value for '{param}': expected {expected}.",
    missing="Missing required parameter: '{param}'.",
    missing_file="Missing required file: '{param}' as a multipart file part.",
    unknown="Unknown parameter: '{param}'.",
    type_code="invalid_type",
    value_code="invalid_value",
    missing_code="missing_required_parameter",
    unknown_code="unknown_parameter",
)


def refusal(
    exc: msgspec.ValidationError, kind: type, payload: Mapping[str, Any], wording: Wording
) -> InvalidRequest:
    """The 400 for `exc`, raised checking `payload` against the declaration `kind`."""
    found = _AT.match(str(exc))
    assert found is not None  # the pattern matches any text
    what, path = found["what"], found["path"] or "$"
    steps = [name or index for name, index in _STEP.findall(path)]
    missing, unknown = _MISSING.match(what), _UNKNOWN.match(what)
    if missing or unknown:
        name = (missing or unknown)[1]  # type: ignore[index]
        param = _param([*steps, name])
        if unknown:  # named in the words; `param` is the object that holds it
            error = wording.refuse("unknown", param)
            error.param = _param(steps) or param
            return error
        field = _field_type(mi.type_info(kind), [*steps, name])
        return wording.refuse("missing_file" if field is not None and is_upload(field) else "missing", param)
    param = _param(steps)
    field = _field_type(mi.type_info(kind), steps)
    if field is None or not what.startswith(("Expected `", "Invalid enum value", "Invalid value")):
        # A rule a Struct's __post_init__ states (its ValueError says what was expected).
        if not param:
            return InvalidRequest(what, code=wording.value_code)
        return wording.refuse("value", param, what)
    value = _value_at(payload, steps)
    if value == "" and "of length >=" in what:
        return wording.refuse("missing", param)  # an empty required string is a missing one
    if value is None and _required(mi.type_info(kind), steps):
        return wording.refuse("missing", param)  # null for a required field: absent
    kind_of = "type" if ", got `" in what else "value"
    return wording.refuse(kind_of, param, expected(field))


def _param(steps: list[str]) -> str:
    out = ""
    for step in steps:
        if step == "...":
            break  # a dict key msgspec does not name: the dict is the parameter
        if step.isdigit():
            out += f"[{step}]"
        else:
            out += ("." if out else "") + step
    return out


def _value_at(payload: Any, steps: list[str]) -> Any:
    node = payload
    for step in steps:
        try:
            node = node[int(step)] if step.isdigit() and isinstance(node, list) else node[step]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _field_type(info: mi.Type, steps: list[str]) -> mi.Type | None:
    """The declared type at `steps` (field names and indexes), or None when the path leaves
    the declaration."""
    node: mi.Type | None = info
    for step in steps:
        if node is None:
            return None
        node = _step(node, step)
    return node


def _required(info: mi.Type, steps: list[str]) -> bool:
    """Whether the last of `steps` names a required field of its Struct."""
    if not steps:
        return False
    parent = _field_type(info, steps[:-1])
    for member in _members(parent) if parent is not None else ():
        if isinstance(member, mi.StructType):
            for f in member.fields:
                if f.encode_name == steps[-1]:
                    return f.required
    return False


def _members(info: mi.Type) -> list[mi.Type]:
    info = _plain(info)
    return [_plain(t) for t in info.types] if isinstance(info, mi.UnionType) else [info]


def _step(info: mi.Type, step: str) -> mi.Type | None:
    info = _plain(info)
    if isinstance(info, mi.UnionType):
        found = [t for t in (_step(member, step) for member in info.types) if t is not None]
        if found and all(isinstance(t, mi.LiteralType) for t in found):  # tags of a tagged union
            return mi.LiteralType(tuple(v for t in found for v in t.values))  # type: ignore[attr-defined]
        return found[0] if found else None
    if isinstance(info, mi.StructType) and not step.isdigit() and step != "...":
        if step == info.tag_field:  # a tagged union's `type`: the tags its members take
            return mi.LiteralType((info.tag,))
        return next((f.type for f in info.fields if f.encode_name == step), None)
    if isinstance(info, mi.ListType | mi.SetType | mi.VarTupleType) and step.isdigit():
        return info.item_type
    if isinstance(info, mi.DictType) and step == "...":
        return info.value_type
    return None


def _plain(info: mi.Type) -> mi.Type:
    while isinstance(info, mi.Metadata):
        info = info.type
    return info


def is_upload(info: mi.Type) -> bool:
    info = _plain(info)
    if isinstance(info, mi.UnionType):
        return any(is_upload(t) for t in info.types)
    if isinstance(info, mi.ListType):
        return is_upload(info.item_type)
    return isinstance(info, mi.CustomType) and info.cls is Upload


def expected(info: mi.Type) -> str:
    """What a value of this declared type is, in words ("an integer from 1 to 10")."""
    while isinstance(info, mi.Metadata):
        if info.extra and "expected" in info.extra:
            return str(info.extra["expected"])
        info = info.type
    if isinstance(info, mi.UnionType):
        kinds = [expected(t) for t in info.types if not isinstance(_plain(t), mi.NoneType)]
        return " or ".join(dict.fromkeys(kinds))
    if isinstance(info, mi.LiteralType):
        return "one of " + ", ".join(str(v) for v in sorted(info.values, key=str) if v != "")
    if isinstance(info, mi.StrType):
        return _sized("a non-empty string" if info.min_length else "a string", info, "characters")
    if isinstance(info, mi.BoolType):
        return "a boolean"
    if isinstance(info, mi.IntType | mi.FloatType):
        return _bounded("an integer" if isinstance(info, mi.IntType) else "a number", info)
    if isinstance(info, mi.ListType | mi.SetType | mi.VarTupleType):
        return _sized("an array", info, "items")
    if isinstance(info, mi.DictType | mi.StructType | mi.TypedDictType | mi.DataclassType):
        return _sized("an object", info, "keys") if isinstance(info, mi.DictType) else "an object"
    if isinstance(info, mi.CustomType) and info.cls is Upload:
        return "a file part (with a filename), not a text field"
    return "a valid value"


def _bounded(noun: str, info: mi.IntType | mi.FloatType) -> str:
    lo = info.ge if info.ge is not None else info.gt
    hi = info.le if info.le is not None else info.lt
    if lo is not None and hi is not None:
        return f"{noun} from {lo:g} to {hi:g}"
    if lo is not None:
        return f"{noun} {'above' if info.ge is None else 'of at least'} {lo:g}"
    if hi is not None:
        return f"{noun} {'below' if info.le is None else 'of at most'} {hi:g}"
    return noun


def _sized(noun: str, info: Any, unit: str) -> str:
    lo, hi = info.min_length, info.max_length
    if lo == 1 and not noun.startswith("a non-empty"):
        noun = "a non-empty " + noun.split(" ", 1)[1]
    if hi is not None and lo not in (None, 0, 1):
        return f"{noun} of {lo} to {hi} {unit}"
    if hi is not None:
        return f"{noun} of at most {hi} {unit}"
    if lo not in (None, 0, 1):
        return f"{noun} of at least {lo} {unit}"
    return noun
