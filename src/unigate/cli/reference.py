"""The configuration reference's tables, generated from the declarations so they cannot drift:
every config key with its type, default and description from the pydantic models in config.py
(`Field(description=...)`, a section's from its field or class docstring), every environment
variable from `settings.ENVIRONMENT` and the vendor keys from `config.ENV_VENDORS`.

docs/configuration.md keeps its hand-written prose; each generated part sits between a
`<!-- generated: NAME -->` line and the next `<!-- end generated -->` line, rewritten by
`python -m unigate.cli.reference docs/configuration.md` (`scripts/docs.sh` runs it before every
site build). `--check` only says whether the page is up to date.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from unigate.config import GatewayConfig, MiB
from unigate.config_source import ENV_VENDORS, ENV_VENDORS_MEANING
from unigate.settings import ENVIRONMENT

_BEGIN = re.compile(r"^<!-- generated: ([a-z -]+) -->$", re.M)
_END = "<!-- end generated -->"
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


class Undescribed(Exception):
    """A key or section declared without a description (the reference would show a blank)."""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _sections(annotation: Any) -> type[BaseModel] | None:
    """The section model a field holds (itself, in a list, or optional), if any."""
    pending = [annotation]
    while pending:
        arg = pending.pop()
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
        pending.extend(typing.get_args(arg))
    return None


def _type(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if origin is Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) for a in args if a is not type(None))
    if origin is list:
        return f"list of {_type(args[0])}"
    if origin is dict:
        return f"map of {_type(args[0])} to {_type(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "entries (below)"
    return str(annotation)


def _bounds(field: FieldInfo) -> str:
    unit = "characters" if field.annotation is str else "entries"
    said = []
    for rule in field.metadata:
        if isinstance(rule, Gt):
            said.append(f"> {_value(rule.gt)}")
        elif isinstance(rule, Ge):
            said.append(f"≥ {_value(rule.ge)}")
        elif isinstance(rule, Lt):
            said.append(f"< {_value(rule.lt)}")
        elif isinstance(rule, Le):
            said.append(f"≤ {_value(rule.le)}")
        elif isinstance(rule, MinLen) and rule.min_length == 1:
            said.append("non-empty")
        elif isinstance(rule, MinLen):
            said.append(f"at least {rule.min_length} {unit}")
        elif isinstance(rule, MaxLen):
            said.append(f"at most {rule.max_length} {unit}")
    return ", ".join(said)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return _value(int(value))
    if isinstance(value, int) and value >= MiB and value % MiB == 0:
        return f"{value} ({value // MiB} MiB)"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return value or '""'
    return str(value)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    return "unset" if value is None else f"`{_value(value)}`"


def _docstring(model: type[BaseModel]) -> str | None:
    doc = model.__dict__.get("__doc__")
    return " ".join(doc.split()) if doc else None


def _walk(
    model: type[BaseModel], path: str, about: str | None
) -> Iterator[tuple[str, str | None, list[tuple[str, FieldInfo]]]]:
    """(section path, its description, its keys that are not sections) for `model` and every
    section under it, depth first in declaration order."""
    fields = [(field.alias or name, field) for name, field in model.model_fields.items()]
    yield path, about, [(key, f) for key, f in fields if _sections(f.annotation) is None]
    for key, field in fields:
        section = _sections(field.annotation)
        if section is not None:
            listed = typing.get_origin(field.annotation) is list
            where = f"{path}.{key}" if path else key
            yield from _walk(
                section, where + ("[]" if listed else ""), field.description or _docstring(section)
            )


def undescribed(model: type[BaseModel] = GatewayConfig) -> list[str]:
    """The keys and sections of `model` declared without a description."""
    missing = []
    for path, about, keys in _walk(model, "", _docstring(model)):
        if path and not about:
            missing.append(path)
        missing.extend(f"{path}.{key}" if path else key for key, field in keys if not field.description)
    return missing


def config_tables(model: type[BaseModel] = GatewayConfig, level: str = "###") -> str:
    """A table per section of the config file: key, type (with its bounds), default, meaning."""
    missing = undescribed(model)
    if missing:
        raise Undescribed(
            f"config keys without a description: {', '.join(missing)}; declare each with "
            "Field(description=...) (a section: its field's description or its class docstring)"
        )
    parts = []
    for path, about, keys in _walk(model, "", _docstring(model)):
        if not keys:
            continue
        title = f"`{path}`" if path else "Top level"
        rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key, field in keys:
            kind = _type(field.annotation)
            bounds = _bounds(field)
            kind = f"{kind}, {bounds}" if bounds else kind
            rows.append(
                f"| `{key}` | {_cell(kind)} | {_cell(_default(field))} | {_cell(field.description or '')} |"
            )
        about_line = f"{_cell(about[0].upper() + about[1:])}\n\n" if about else ""
        parts.append(f"{level} {title}\n\n{about_line}" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def environment_table() -> str:
    """Every environment variable: name, default, meaning."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for var in ENVIRONMENT:
        names = ", ".join(f"`{n.strip()}`" for n in re.split(r"[,()]", var.names) if n.strip())
        shown = var.shown or ("none" if var.default is None else f"`{var.default}`")
        rows.append(f"| {names} | {_cell(shown)} | {_cell(var.meaning)} |")
    vendors = ", ".join(
        " or ".join(f"`{k}`" for k in vendor.keys) + " / " + " or ".join(f"`{b}`" for b in vendor.base_urls)
        for vendor in ENV_VENDORS.values()
    )
    rows.append(f"| {vendors} | none | {_cell(ENV_VENDORS_MEANING)} |")
    return "\n".join(rows) + "\n"


PARTS: dict[str, Callable[[], str]] = {"environment": environment_table, "config keys": config_tables}


def fill(page: str, parts: dict[str, Callable[[], str]] = PARTS) -> str:
    """`page` with each generated part rewritten from the declarations."""
    out, at = [], 0
    for begin in _BEGIN.finditer(page):
        name = begin.group(1)
        if name not in parts:
            raise KeyError(f"unknown generated part {name!r} (known: {', '.join(parts)})")
        end = page.find(_END, begin.end())
        if end < 0:
            raise ValueError(f"generated part {name!r} has no {_END!r} line after it")
        out += [page[at : begin.end()], "\n", parts[name](), _END]
        at = end + len(_END)
    return "".join(out) + page[at:]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    stale = []
    for path in paths:
        text = path.read_text()
        filled = fill(text)
        if filled != text:
            stale.append(str(path))
            if not check:
                path.write_text(filled)
    if check and stale:
        print(f"out of date: {', '.join(stale)}; run bash scripts/docs.sh to regenerate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
