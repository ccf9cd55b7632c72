"""The tools of a Responses request as chat completions tools, and the calls back.

Function tools map one to one. A `namespace` tool groups client-run function and custom tools:
each member is offered upstream as a flat function whose name cannot collide (`ns__name`, or
that name with a short hash when it is taken, too long or not a valid function name), and the
upstream's calls of it come back as items that carry the namespace again. A `custom` tool
takes free-form text: upstream it is a function with one string parameter, `input` (its
grammar, if it has one, goes into the description), and its calls come back as
`custom_tool_call` items. Web search becomes `web_search_options`; every other hosted tool
has no equivalent on a translated route and is recorded in `Dropped`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.translate import web_search
from unigate.translate.checks import optional_array, optional_object, optional_string, wrong_type
from unigate.translate.translation import Dropped

Json = dict[str, Any]

WEB_SEARCH_TYPES = frozenset(
    {"web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"}
)
_CHOICES = frozenset({"auto", "none", "required"})
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
INPUT = "input"  # the one parameter of a custom tool's function


@dataclass(frozen=True, slots=True)
class ToolRef:
    """A client tool behind an upstream function name."""

    name: str
    namespace: str | None = None
    custom: bool = False


class ToolNames:
    """Upstream function names ⇄ the client's tools, for one request."""

    def __init__(self) -> None:
        self._refs: dict[str, ToolRef] = {}  # upstream name -> tool
        self._flat: dict[tuple[str | None, str], str] = {}  # (namespace, name) -> upstream name

    def add(self, ref: ToolRef) -> str:
        key = (ref.namespace, ref.name)
        known = self._flat.get(key)
        if known is not None:
            return known
        flat = ref.name if ref.namespace is None else _flat_name(ref.namespace, ref.name, self._refs)
        self._refs[flat] = ref
        self._flat[key] = flat
        return flat

    def upstream(self, name: str, namespace: str | None = None, custom: bool = False) -> str:
        """The upstream name of a call in the conversation (one of a tool no longer offered is
        named the same way)."""
        known = self._flat.get((namespace, name))
        return known if known is not None else self.add(ToolRef(name, namespace, custom))

    def ref(self, upstream: str) -> ToolRef:
        """The client's tool an upstream call names (an unknown name: a plain function)."""
        return self._refs.get(upstream) or ToolRef(upstream)

    def members(self, namespace: str) -> list[str]:
        return [flat for (ns, _), flat in self._flat.items() if ns == namespace]


def _flat_name(namespace: str, name: str, taken: dict[str, ToolRef]) -> str:
    joined = f"{namespace.rstrip('_')}__{name.lstrip('_')}"
    if _NAME.fullmatch(joined) and joined not in taken:
        return joined
    digest = hashlib.blake2b(f"{namespace}\0{name}".encode(), digest_size=4).hexdigest()
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", joined)[:52]
    candidate, n = f"{stem}_{digest}", 1
    while candidate in taken:
        n += 1
        candidate = f"{stem}_{digest}_{n}"
    return candidate


# ---------------------------------------------------------------- request


def map_tools(payload: Json, chat: Json, dropped: Dropped) -> ToolNames:
    """`tools` and `tool_choice` onto the chat request; what has no chat form goes to `dropped`."""
    names = ToolNames()
    tools = optional_array(payload.get("tools"), "tools")
    checked = [_checked(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    # Top-level names are sent as they are, so they are taken before any namespace is flattened.
    for tool in checked:
        if tool["type"] in ("function", "custom"):
            names.add(ToolRef(tool["name"], None, tool["type"] == "custom"))
    functions: list[Json] = []
    for i, tool in enumerate(checked):
        where, kind = f"tools[{i}]", tool["type"]
        if kind in ("function", "custom"):
            functions.append(_function(tool, names.add(ToolRef(tool["name"], None, kind == "custom")), where))
        elif kind == "namespace":
            functions.extend(_namespace(tool, names, where))
        elif kind in WEB_SEARCH_TYPES:
            chat[web_search.OPTIONS] = _search_options(tool, where, dropped)
        else:
            dropped.tool(kind, where)
    if functions:
        chat["tools"] = functions
    choice = payload.get("tool_choice")
    if choice is not None:
        mapped = _tool_choice(choice, names, dropped)
        if mapped is not None and functions:  # a tool choice without tools is refused upstream
            chat["tool_choice"] = mapped
    return names


def _checked(tool: Any, where: str) -> Json:
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str) or not tool["type"]:
        raise wrong_type(where, "a tool object with a `type`")
    name = tool.get("name")
    if tool["type"] in ("function", "custom", "namespace") and (not isinstance(name, str) or not name):
        raise _missing(f"{where}.name")
    optional_string(name, f"{where}.name")  # hosted tools that have one name it too
    return tool


def _function(tool: Json, upstream: str, where: str) -> Json:
    fn: Json = {"name": upstream}
    description = optional_string(tool.get("description"), f"{where}.description")
    if tool["type"] == "custom":
        fn["description"] = _custom_description(description, tool, where)
        # Free-form text: one string, so the upstream model writes it as it is.
        fn["parameters"] = {
            "type": "object",
            "properties": {INPUT: {"type": "string", "description": "The tool's input, as free-form text."}},
            "required": [INPUT],
            "additionalProperties": False,
        }
        return {"type": "function", "function": fn}
    if description is not None:
        fn["description"] = description
    parameters = optional_object(tool.get("parameters"), f"{where}.parameters")
    if parameters:
        fn["parameters"] = parameters
    if tool.get("strict") is not None:
        fn["strict"] = tool["strict"]
    return {"type": "function", "function": fn}


def _custom_description(description: str | None, tool: Json, where: str) -> str:
    fmt = optional_object(tool.get("format"), f"{where}.format")
    parts = [description] if description else []
    if fmt.get("type") == "grammar":
        syntax = optional_string(fmt.get("syntax"), f"{where}.format.syntax") or "lark"
        definition = optional_string(fmt.get("definition"), f"{where}.format.definition") or ""
        parts.append(f"The `{INPUT}` must follow this {syntax} grammar:\n{definition}")
    return "\n\n".join(parts) or f"The `{INPUT}` is free-form text."


def _namespace(tool: Json, names: ToolNames, where: str) -> list[Json]:
    namespace = tool["name"]
    about = optional_string(tool.get("description"), f"{where}.description")
    out: list[Json] = []
    for j, member in enumerate(optional_array(tool.get("tools"), f"{where}.tools")):
        inner = _checked(member, f"{where}.tools[{j}]")
        if inner["type"] not in ("function", "custom"):
            raise InvalidRequest(
                f"Invalid value for '{where}.tools[{j}].type': a namespace holds function and custom tools.",
                param=f"{where}.tools[{j}].type",
                code="invalid_value",
            )
        ref = ToolRef(inner["name"], namespace, inner["type"] == "custom")
        function = _function(inner, names.add(ref), f"{where}.tools[{j}]")
        if about:  # the namespace's description is the member's context upstream
            own = function["function"].get("description")
            function["function"]["description"] = f"{about}\n\n{own}" if own else about
        out.append(function)
    return out


def _search_options(tool: Json, where: str, dropped: Dropped) -> Json:
    location = optional_object(tool.get("user_location"), f"{where}.user_location")
    size = optional_string(tool.get("search_context_size"), f"{where}.search_context_size")
    for name in ("filters", "search_content_types"):
        if tool.get(name):
            dropped.drop(f"tools.{tool['type']}.{name}")
    if tool.get("external_web_access") is False:
        dropped.drop(f"tools.{tool['type']}.external_web_access")
    return web_search.options(size, location)


def _tool_choice(choice: Any, names: ToolNames, dropped: Dropped) -> Any:
    if isinstance(choice, str):
        if choice not in _CHOICES:
            raise InvalidRequest(
                "Invalid value for 'tool_choice': expected auto, none or required.",
                param="tool_choice",
                code="invalid_value",
            )
        return choice
    if not isinstance(choice, dict):
        raise wrong_type("tool_choice", "a string or an object")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return {"type": "function", "function": {"name": _chosen(choice, names, "tool_choice")}}
    if kind == "allowed_tools":
        listed = optional_array(choice.get("tools"), "tool_choice.tools")
        mode = choice.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise InvalidRequest(
                "Invalid value for 'tool_choice.mode': expected auto or required.",
                param="tool_choice.mode",
                code="invalid_value",
            )
        allowed: list[str] = []
        for i, entry in enumerate(listed):
            allowed.extend(_allowed(entry, names, f"tool_choice.tools[{i}]"))
        if not allowed:
            return None  # only hosted tools listed: nothing to narrow upstream
        functions = [{"type": "function", "function": {"name": n}} for n in allowed]
        return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": functions}}
    if not isinstance(kind, str):
        raise wrong_type("tool_choice.type", "a string")
    # A hosted tool forced: a translated route cannot force it (web search stays on, if asked).
    dropped.drop("tool_choice")
    return None


def _allowed(entry: Any, names: ToolNames, where: str) -> list[str]:
    if not isinstance(entry, dict):
        raise wrong_type(where, "an object")
    kind = entry.get("type")
    if kind in ("function", "custom"):
        return [_chosen(entry, names, where)]
    if kind == "namespace":
        name = entry.get("name")
        if not isinstance(name, str):
            raise wrong_type(f"{where}.name", "a string")
        return names.members(name)
    return []  # hosted tools are not narrowed upstream


def _chosen(entry: Json, names: ToolNames, where: str) -> str:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise wrong_type(f"{where}.name", "a string")
    namespace = optional_string(entry.get("namespace"), f"{where}.namespace")
    return names.upstream(name, namespace, entry.get("type") == "custom")


def _missing(param: str) -> InvalidRequest:
    return InvalidRequest(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


# ---------------------------------------------------------------- calls back


def call_item(
    names: ToolNames, item_id: str, call_id: str, upstream: str, arguments: str, status: str
) -> Json:
    """The output item for an upstream's function call: a `function_call` or a
    `custom_tool_call`, under its namespace when it has one."""
    ref = names.ref(upstream)
    kind = "custom_tool_call" if ref.custom else "function_call"
    item: Json = {"id": item_id, "type": kind, "status": status, "call_id": call_id}
    if ref.namespace is not None:
        item["namespace"] = ref.namespace
    item["name"] = ref.name
    if ref.custom:
        item[INPUT] = custom_input(arguments)
    else:
        item["arguments"] = arguments
    return item


def custom_input(arguments: str) -> str:
    """A custom tool's free-form input from its function's arguments (`{"input": ...}`); the
    raw arguments when the upstream wrote something else."""
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    value = parsed.get(INPUT) if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else arguments


def custom_arguments(text: str) -> str:
    return orjson.dumps({INPUT: text}).decode()
