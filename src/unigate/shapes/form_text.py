"""A form field's text read as its declared type: `n=2` is the integer 2, `stream=true` the
boolean. Only these spellings: text that fits none of the declared types is left as it is, for
the check to refuse with the field's name (`null` is no null, `2.0` no integer, and digits are
ASCII digits only, whatever `int()` would take)."""

from __future__ import annotations

import re
from typing import Any

from msgspec import inspect as mi

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def from_text(value: Any, info: mi.Type) -> Any:
    """`value` as the declared type `info` reads it, when it is text in one of its spellings."""
    members = _members(info)
    if isinstance(value, list):
        items = [m.item_type for m in members if isinstance(m, mi.ListType)]
        return [from_text(v, items[0]) for v in value] if items else value
    if not isinstance(value, str):
        return value
    for member in members:
        if isinstance(member, mi.StrType) or (isinstance(member, mi.LiteralType) and value in member.values):
            return value  # text is what the field takes
    for member in members:
        if _takes_int(member) and _INT.fullmatch(value):
            return int(value)
        if isinstance(member, mi.FloatType) and _FLOAT.fullmatch(value):
            return float(value)
        if isinstance(member, mi.BoolType) and value.lower() in _BOOLS:
            return _BOOLS[value.lower()]
    return value


def _takes_int(member: mi.Type) -> bool:
    if isinstance(member, mi.IntType):
        return True
    return isinstance(member, mi.LiteralType) and any(
        isinstance(v, int) and not isinstance(v, bool) for v in member.values
    )


def _members(info: mi.Type) -> list[mi.Type]:
    while isinstance(info, mi.Metadata):
        info = info.type
    if isinstance(info, mi.UnionType):
        return [m for t in info.types for m in _members(t)]
    return [info]
