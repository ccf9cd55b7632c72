"""Request bodies, Gemini -> OpenAI: a generateContent request addressed to `model` as an
OpenAI chat completions body (the gateway's canonical form). Gemini function calls may carry
no ids: ids `call_<n>` are synthesized and function responses matched back to them by name.
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.recent_values import RecentValues
from unigate.translate import web_search
from unigate.translate.checks import (
    base64_text,
    optional_array,
    optional_number,
    optional_object,
    optional_string,
    place,
    string_list,
    wrong_type,
)
from unigate.translate.gemini_fields import Json, as_list, as_object, field
from unigate.translate.gemini_request import _AUDIO_FORMAT, _SAMPLING_TO_OPENAI, guess_mime
from unigate.translate.gemini_schemas import json_schema_of, json_schema_types, parameters_schema
from unigate.translate.gemini_search import is_search_tool
from unigate.translate.known_turns import MIN_TURNS
from unigate.translate.translation import Dropped

_INTEGER_SAMPLING = frozenset({"candidateCount", "seed", "maxOutputTokens", "logprobs"})
# Google's tools, as the REST API spells them: functions and search have a canonical form,
# the others run inside Google only (a name not here is refused, as Google refuses it).
_CANONICAL_TOOLS = frozenset({"functionDeclarations", "googleSearch", "googleSearchRetrieval"})
# What the translation reads of a request, and of its generationConfig what every route honours
# (the sampling fields some protocols drop apart); anything else a client sets is named dropped.
_READ_TOP = frozenset({"model", "contents", "systemInstruction", "tools", "toolConfig", "generationConfig"})
_READ_GENERATION = frozenset(
    {
        "maxOutputTokens",
        "stopSequences",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
    }
)
_GOOGLE_TOOLS = _CANONICAL_TOOLS | {
    "codeExecution", "urlContext", "fileSearch", "googleMaps", "computerUse", "enterpriseWebSearch",
    "retrieval", "mcpServers", "parallelAiSearch", "exaAiSearch",
}  # fmt: skip


# What `_CallIds` holds between two turns: calls issued, and the open calls' ids by name.
_IdsState = tuple[int, tuple[tuple[str, tuple[str, ...]], ...]]
# Contents translated lately (known_turns.py), by the calling key, the call ids open before
# the content and its JSON: its chat messages, and the call ids open after it.
Contents = RecentValues[tuple[str, _IdsState, bytes], tuple[list[Json], _IdsState]]


class _CallIds:
    """Ids for Gemini function calls: the call's own `id` when the model gave one, else `call_<n>`
    in order; a functionResponse without an id answers the oldest open call of its name."""

    def __init__(self) -> None:
        self._count = 0
        self._open: dict[str, list[str]] = {}

    def state(self) -> _IdsState:
        open_ids = self._open
        if not any(open_ids.values()):  # between turns, every call answered: the usual case
            return self._count, ()
        return self._count, tuple((name, tuple(ids)) for name, ids in open_ids.items() if ids)

    def restore(self, state: _IdsState) -> None:
        self._count = state[0]
        self._open = {name: list(ids) for name, ids in state[1]}

    def issue(self, name: str, given: Any) -> str:
        call_id = given if isinstance(given, str) and given else f"call_{self._count}"
        self._count += 1
        self._open.setdefault(name, []).append(call_id)
        return call_id

    def answer(self, name: str, given: Any) -> str | None:
        open_ids = self._open.get(name, [])
        if isinstance(given, str) and given:
            if given in open_ids:
                open_ids.remove(given)
            return given
        return open_ids.pop(0) if open_ids else None


def gemini_to_openai_request(
    payload: Json, model: str, dropped: Dropped | None = None, known: Contents | None = None, scope: str = ""
) -> Json:
    """The OpenAI chat completions body for a generateContent request addressed to `model`.
    Google Search becomes `web_search_options`; Google's other tools have no equivalent and
    are left out, named in `dropped`. With `known`, the contents of a long conversation are
    looked up there (under `scope`, the calling key's id) and only those not seen lately with
    the same call ids open are translated."""
    contents = field(payload, "contents")
    if not isinstance(contents, list) or not contents:
        raise InvalidRequest("`contents` must be a non-empty array.", param="contents")
    messages: list[Json] = []
    system = _system_text(field(payload, "systemInstruction"))
    if system:
        messages.append({"role": "system", "content": system})
    ids = _CallIds()
    if known is None or len(contents) < MIN_TURNS:
        for i, content in enumerate(contents):
            messages.extend(_messages(_object(content, "contents[{}]", i), i, ids))
    else:
        _known_messages(contents, ids, known, scope, messages)
    body: Json = {"model": model, "messages": messages}
    tools = _openai_tools(field(payload, "tools"), body, dropped)
    if tools:
        body["tools"] = tools
    config = optional_object(field(payload, "toolConfig"), "toolConfig")
    calling = optional_object(field(config, "functionCallingConfig"), "toolConfig.functionCallingConfig")
    choice = _tool_choice(calling)
    if choice is not None:
        body["tool_choice"] = choice
    generation = optional_object(field(payload, "generationConfig"), "generationConfig")
    body.update(_sampling(generation))
    if dropped is not None:
        _name_dropped(payload, generation, dropped)
    return body


def _name_dropped(payload: Json, generation: Json, dropped: Dropped) -> None:
    """Name what the canonical form cannot carry (`safetySettings`, `generationConfig.topK`,
    `generationConfig.thinkingConfig`...), and the sampling fields some protocols drop, as the
    other dialects' translations do. Read by the wire name Google also takes in snake_case."""
    for name, value in payload.items():
        if value is not None and _camel(name) not in _READ_TOP:
            dropped.drop(_camel(name))
    for name, value in generation.items():
        if value is None:
            continue
        camel = _camel(name)
        if camel in _READ_GENERATION:
            continue
        canonical = _SAMPLING_TO_OPENAI.get(camel)
        if canonical is None:
            dropped.drop(f"generationConfig.{camel}")
        else:
            dropped.by_protocol[f"generationConfig.{camel}"] = canonical


def _known_messages(contents: list[Any], ids: _CallIds, known: Contents, scope: str, out: list[Json]) -> None:
    """Every content's chat messages onto `out`, as `_messages` makes them: from `known` when the
    same JSON came lately with the same call ids open (the ids it issues and answers depend on
    them), else translated and kept there with the ids it leaves open."""
    get, dumps = known.get, orjson.dumps
    for i, content in enumerate(contents):
        before = ids.state()
        try:
            key = (scope, before, dumps(content))
        except orjson.JSONEncodeError:  # nested past orjson's depth: translated (and refused)
            out.extend(_messages(_object(content, "contents[{}]", i), i, ids))
            continue
        found = get(key)
        if found is None:
            found = (_messages(_object(content, "contents[{}]", i), i, ids), ids.state())
            known.put(key, found, key[2])
        else:
            ids.restore(found[1])
        out.extend(found[0])


def _object(value: Any, where: str, *at: object) -> Json:
    if not isinstance(value, dict):
        raise wrong_type(place(where, at), "an object")
    return value


def _system_text(instruction: Any) -> str:
    if isinstance(instruction, str):
        return instruction
    parts = optional_array(
        optional_object(instruction, "systemInstruction").get("parts"), "systemInstruction.parts"
    )
    texts = []
    for j, part in enumerate(parts):
        where = f"systemInstruction.parts[{j}]"
        text = optional_string(_object(part, where).get("text"), where + ".text")
        if text is not None:
            texts.append(text)
    return "\n".join(texts)


def _messages(content: Json, i: int, ids: _CallIds) -> list[Json]:
    role = optional_string(content.get("role"), "contents[{}].role", i) or "user"
    listed = optional_array(content.get("parts"), "contents[{}].parts", i)
    parts = [_object(part, "contents[{}].parts[{}]", i, j) for j, part in enumerate(listed)]
    if role == "model":
        return [_assistant_message(parts, i, ids)]
    if role not in ("user", "function", "tool"):
        raise InvalidRequest(f"contents[{i}].role {role!r} is not supported.", param=f"contents[{i}].role")
    # OpenAI wants tool results right after the assistant turn that made the calls.
    tool_messages = [
        _tool_message(as_object(field(p, "functionResponse")), i, ids) for p in parts if _is_response(p)
    ]
    user_parts = [
        _openai_part(part, i) for part in parts if not _is_response(part) and not part.get("thought")
    ]
    if not user_parts:
        return tool_messages
    if all(part["type"] == "text" for part in user_parts):
        return [*tool_messages, {"role": "user", "content": "".join(part["text"] for part in user_parts)}]
    return [*tool_messages, {"role": "user", "content": user_parts}]


def _is_response(part: Json) -> bool:
    return field(part, "functionResponse") is not None


def _assistant_message(parts: list[Json], i: int, ids: _CallIds) -> Json:
    # Thought summaries and thought signatures have no place in an OpenAI conversation.
    text = "".join(str(part["text"]) for part in parts if "text" in part and not part.get("thought"))
    calls = []
    for part in parts:
        call = field(part, "functionCall")
        if isinstance(call, dict):
            calls.append(tool_call(call, ids.issue(str(call.get("name")), call.get("id"))))
    message: Json = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def tool_call(call: Json, call_id: str) -> Json:
    """An OpenAI tool call for a Gemini `functionCall` (the whole argument object at once)."""
    arguments = orjson.dumps(call.get("args") or {}).decode()
    return {"id": call_id, "type": "function", "function": {"name": call.get("name"), "arguments": arguments}}


def _tool_message(response: Json, i: int, ids: _CallIds) -> Json:
    name = str(response.get("name"))
    call_id = ids.answer(name, response.get("id"))
    if call_id is None:
        raise InvalidRequest(f"contents[{i}]: functionResponse {name!r} answers no earlier functionCall.")
    return {"role": "tool", "tool_call_id": call_id, "content": response_text(response.get("response"))}


def response_text(response: Any) -> str:
    """Inverse of `_response_object`: a lone `output` string comes back as it was sent."""
    if isinstance(response, dict) and response.keys() == {"output"} and isinstance(response["output"], str):
        return response["output"]
    return orjson.dumps(response if response is not None else {}).decode()


def _openai_part(part: Json, i: int) -> Json:
    if isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    inline = field(part, "inlineData")
    if inline is not None:
        where = f"contents[{i}].inlineData"
        inline = _object(inline, where)
        mime = optional_string(field(inline, "mimeType"), where + ".mimeType") or ""
        data = base64_text(inline.get("data"), where + ".data")
        if mime in _AUDIO_FORMAT:
            return {"type": "input_audio", "input_audio": {"data": data, "format": _AUDIO_FORMAT[mime]}}
        url = f"data:{mime};base64,{data}"
        if mime.startswith("image/"):
            return {"type": "image_url", "image_url": {"url": url}}
        return {"type": "file", "file": {"file_data": url}}
    file = field(part, "fileData")
    if isinstance(file, dict):
        uri = str(field(file, "fileUri"))
        if str(field(file, "mimeType") or guess_mime(uri)).startswith("image/"):
            return {"type": "image_url", "image_url": {"url": uri}}
    raise InvalidRequest(f"contents[{i}]: a part of kind {sorted(part)} has no OpenAI chat equivalent.")


def _openai_tools(tools: Any, body: Json, dropped: Dropped | None) -> list[Json]:
    out = []
    for j, tool in enumerate(optional_array(tools, "tools")):
        tool = _object(tool, f"tools[{j}]")
        if is_search_tool(tool):
            body[web_search.OPTIONS] = {}
        for name in tool:
            camel = _camel(name)
            if camel not in _GOOGLE_TOOLS:
                raise InvalidRequest(f"Unknown name {name!r} at 'tools[{j}]'.", param=f"tools[{j}].{name}")
            if camel not in _CANONICAL_TOOLS and dropped is not None:
                dropped.tool(camel, f"tools[{j}]")
        declarations = field(tool, "functionDeclarations")
        if not isinstance(declarations, list):
            if any(_camel(name) == "functionDeclarations" for name in tool):
                raise wrong_type(f"tools[{j}].functionDeclarations", "an array")
            continue
        for k, given in enumerate(declarations):
            where = f"tools[{j}].functionDeclarations[{k}]"
            declaration = _object(given, where)
            if not isinstance(declaration.get("name"), str) or not declaration["name"]:
                raise wrong_type(f"{where}.name", "a non-empty string")  # the call's name: required
            fn: Json = {"name": declaration["name"]}
            if isinstance(declaration.get("description"), str):
                fn["description"] = declaration["description"]
            json_schema = field(declaration, "parametersJsonSchema")
            parameters = field(declaration, "parameters")
            if isinstance(json_schema, dict):
                fn["parameters"] = parameters_schema(json_schema)
            elif isinstance(parameters, dict):
                fn["parameters"] = json_schema_of(parameters)
            out.append({"type": "function", "function": fn})
    return out


def _camel(name: str) -> str:
    """`code_execution` -> `codeExecution`: Google accepts both spellings."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _tool_choice(config: Json) -> Any:
    mode = str(config.get("mode") or "").upper()
    names = [name for name in as_list(field(config, "allowedFunctionNames")) if isinstance(name, str)]
    if mode == "NONE":
        return "none"
    if mode == "ANY" and len(names) == 1:
        return {"type": "function", "function": {"name": names[0]}}
    if mode == "ANY" and names:
        tools = [{"type": "function", "function": {"name": name}} for name in names]
        return {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": tools}}
    if mode == "ANY":
        return "required"
    # AUTO and VALIDATED (AUTO that checks the call against the schema) are OpenAI's default.
    return "auto" if mode else None


def _sampling(config: Json) -> Json:
    """Gemini generationConfig -> OpenAI sampling fields (`topK` has no OpenAI equivalent)."""
    out: Json = {}
    for gemini, openai in _SAMPLING_TO_OPENAI.items():
        value = field(config, gemini)
        if value is not None:
            _check_sampling(gemini, value)
            out[openai] = value
    stop = string_list(field(config, "stopSequences"), "generationConfig.stopSequences")
    if stop:
        out["stop"] = stop
    string_list(field(config, "responseModalities"), "generationConfig.responseModalities")
    mime = optional_string(field(config, "responseMimeType"), "generationConfig.responseMimeType")
    if mime == "application/json":
        json_schema = optional_object(
            field(config, "responseJsonSchema"), "generationConfig.responseJsonSchema"
        )
        schema = optional_object(field(config, "responseSchema"), "generationConfig.responseSchema")
        if json_schema:
            out["response_format"] = _schema_format(json_schema_types(json_schema))
        elif schema:
            out["response_format"] = _schema_format(json_schema_of(schema))
        else:
            out["response_format"] = {"type": "json_object"}
    return out


def _check_sampling(name: str, value: Any) -> None:
    where = f"generationConfig.{name}"
    if name == "responseLogprobs":
        if not isinstance(value, bool):
            raise wrong_type(where, "a boolean")
        return
    integer = name in _INTEGER_SAMPLING
    optional_number(value, where, integer)
    if integer and value < 1 and name != "seed" and name != "logprobs":
        raise InvalidRequest(f"`{where}` must be a positive integer.", param=where)


def _schema_format(schema: Json) -> Json:
    return {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
