"""Function tools offered in a chat request: validation, choosing which to call, and the
call itself, with arguments generated to be valid against the tool's parameter schema."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from unigate_sandbox.params import invalid_type, invalid_value, optional_bool
from unigate_sandbox.schema_values import Budget, example_value
from unigate_sandbox.text_hints import name_parts
from unigate_sandbox.tokens import STOPWORDS, words

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TOOLS = 128  # OpenAI's limit


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]

    def vocabulary(self) -> set[str]:
        """Words that suggest this tool: its name parts, description, parameter names."""
        found = set(name_parts(self.name))
        found.update(w.lower() for w in words(self.description))
        props = self.parameters.get("properties")
        if isinstance(props, dict):
            for key in props:
                found.update(name_parts(key))
        return {_stem(w) for w in found if w not in STOPWORDS}


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    tools: tuple[Tool, ...]
    mode: str  # none | auto | required
    forced: str | None  # the one tool named by tool_choice
    allowed: frozenset[str] | None  # tool_choice.allowed_tools
    parallel: bool

    @property
    def active(self) -> bool:
        return bool(self.tools) and self.mode != "none"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


def parse_tool_policy(payload: dict[str, Any]) -> ToolPolicy:
    tools = _tools(payload.get("tools"))
    names = {t.name for t in tools}
    mode, forced, allowed = _tool_choice(payload.get("tool_choice"), names)
    if (forced or mode == "required" or allowed is not None) and not tools:
        raise invalid_value("tool_choice", "a tool choice requires 'tools' to be specified.")
    parallel = optional_bool(payload, "parallel_tool_calls", True)
    return ToolPolicy(tools, mode, forced, allowed, parallel)


def _tools(raw: object) -> tuple[Tool, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise invalid_type("tools", "a non-empty array of function tools")
    if len(raw) > MAX_TOOLS:
        raise invalid_value("tools", f"at most {MAX_TOOLS} tools are allowed per request.")
    out: list[Tool] = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        fn = item.get("function") if isinstance(item, dict) else None
        if not isinstance(item, dict) or item.get("type") != "function" or not isinstance(fn, dict):
            raise invalid_value(
                where, "only tools of type 'function' with a 'function' object are supported."
            )
        name = fn.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise invalid_value(f"{where}.function.name", "expected 1-64 letters, digits, '_' or '-'.")
        description = fn.get("description") or ""
        if not isinstance(description, str):
            raise invalid_type(f"{where}.function.description", "a string")
        parameters = fn.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}  # a tool without arguments
        if not isinstance(parameters, dict):
            raise invalid_type(f"{where}.function.parameters", "a JSON Schema object")
        if any(t.name == name for t in out):
            raise invalid_value(f"{where}.function.name", f"duplicate tool name '{name}'.")
        out.append(Tool(name, description, parameters))
    return tuple(out)


def _tool_choice(raw: object, names: set[str]) -> tuple[str, str | None, frozenset[str] | None]:
    """(mode, forced tool, allowed tools) from the `tool_choice` field."""
    if raw is None:
        return "auto", None, None
    if raw in ("none", "auto", "required"):
        return str(raw), None, None
    if isinstance(raw, dict) and raw.get("type") == "function":
        fn = raw.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str):
            raise invalid_type("tool_choice.function.name", "a string")
        if name not in names:
            raise invalid_value("tool_choice", f"no tool named '{name}' was provided in 'tools'.")
        return "required", name, None
    if isinstance(raw, dict) and raw.get("type") == "allowed_tools":
        spec = raw.get("allowed_tools")
        listed = spec.get("tools") if isinstance(spec, dict) else None
        mode = spec.get("mode", "auto") if isinstance(spec, dict) else None
        if not isinstance(listed, list) or mode not in ("auto", "required"):
            raise invalid_value(
                "tool_choice.allowed_tools", "expected a mode (auto|required) and a tools array."
            )
        allowed = {_listed_name(t) for t in listed}
        unknown = sorted(n for n in allowed if n not in names)
        if unknown:
            raise invalid_value("tool_choice.allowed_tools", f"unknown tool '{unknown[0]}'.")
        return str(mode), None, frozenset(allowed)
    raise invalid_value("tool_choice", "expected 'none', 'auto', 'required' or a function tool choice.")


def _listed_name(entry: object) -> str:
    fn = entry.get("function") if isinstance(entry, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str):
        raise invalid_type("tool_choice.allowed_tools.tools", "function tool references with a name")
    return name


def choose_tools(policy: ToolPolicy, user_text: str) -> list[Tool]:
    """The tools to call: the forced one; else every tool the text names outright (the first
    of them when parallel calls are off); else the best word-overlap match, ties to the first.
    A named tool wins over word overlap: agents offer tools with long descriptions that share
    words with any request."""
    candidates = [t for t in policy.tools if policy.allowed is None or t.name in policy.allowed]
    if policy.forced:
        return [t for t in candidates if t.name == policy.forced]
    named = [t for t in candidates if _names_tool(user_text, t.name)]
    if named:
        return named if policy.parallel else named[:1]
    said = {_stem(w.lower()) for w in words(user_text) if w.lower() not in STOPWORDS}
    best = max(candidates, key=lambda t: len(said & t.vocabulary()))  # max keeps the first on ties
    return [best]


def make_calls(tools: list[Tool], user_text: str, salt: str, budget: Budget | None = None) -> list[ToolCall]:
    calls = []
    for i, tool in enumerate(tools):
        hint = _request_for(tool, tools, user_text) if len(tools) > 1 else user_text
        arguments = orjson.dumps(example_value(tool.parameters, hint, "tools", budget)).decode()
        digest = hashlib.blake2b(f"{salt}/{i}/{tool.name}/{arguments}".encode(), digest_size=12).hexdigest()
        calls.append(ToolCall(f"call_{digest}", tool.name, arguments))
    return calls


def _mention(text: str, name: str) -> re.Match[str] | None:
    spaced = r"[\s_-]+".join(re.escape(p) for p in name_parts(name))
    return re.search(rf"\b{spaced}\b", text, re.IGNORECASE) if spaced else None


def _names_tool(text: str, name: str) -> bool:
    return _mention(text, name) is not None


def _request_for(tool: Tool, tools: list[Tool], text: str) -> str:
    """In "call a for Paris and b for ACME", the part that concerns `tool`: "for Paris and"."""
    found = _mention(text, tool.name)
    if found is None:
        return text
    later = [m.start() for t in tools if (m := _mention(text, t.name)) and m.start() > found.start()]
    return text[found.end() : min(later, default=len(text))]


def _stem(word: str) -> str:
    # Crude plural folding so "forecasts" matches "forecast" in a tool description.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
