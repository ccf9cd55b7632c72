"""Request bodies: OpenAI chat completions ⇄ Gemini generateContent (v1beta).

The Gemini model name travels in the URL (`models/{model}:generateContent`), so the Gemini body
has no `model` field and the reverse direction takes it as an argument. Gemini function calls
carry no ids in older models: OpenAI `tool_call_id`s are mapped back to function names through
the earlier assistant `tool_calls`, and ids `call_<n>` are synthesized the other way.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import orjson

from unigate.errors import InvalidRequest
from unigate.translate import web_search
from unigate.translate.gemini_fields import AUDIO_MIME, Json, as_list, as_object
from unigate.translate.gemini_search import search_tool

_MODE_FROM_CHOICE = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_SAMPLING_TO_GEMINI = {
    "temperature": "temperature",
    "top_p": "topP",
    "n": "candidateCount",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "top_logprobs": "logprobs",
}
# `max_completion_tokens` rather than the legacy `max_tokens`: OpenAI reasoning models reject
# the latter, while OpenAI-compatible servers that predate the new name merely ignore it.
_SAMPLING_TO_OPENAI = {gemini: openai for openai, gemini in _SAMPLING_TO_GEMINI.items()} | {
    "maxOutputTokens": "max_completion_tokens",
    "responseLogprobs": "logprobs",
}
# Gemini `Schema` is an OpenAPI 3.0 subset and rejects any other keyword with a 400 (JSON Schema
# `additionalProperties`, `$schema`, `$ref`, `strict`, `examples`, `exclusiveMinimum`, ...).
_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
# Other `format` values (`uri`, `email`, ...) are refused by Gemini for STRING fields.
_SCHEMA_FORMATS = frozenset({"enum", "date-time", "int32", "int64", "float", "double"})
_MIME_BY_EXTENSION = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "heic": "image/heic",
    "heif": "image/heif",
    "pdf": "application/pdf",
}
_AUDIO_FORMAT = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mp3": "mp3", "audio/mpeg": "mp3"}


# --- OpenAI -> Gemini -------------------------------------------------------------------------


def openai_to_gemini_request(payload: Json) -> Json:
    """The generateContent body for an OpenAI chat completions request."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("`messages` must be a non-empty array.", param="messages")
    system, contents = _contents(messages)
    body: Json = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    calling, only = _calling_config(payload.get("tool_choice"))
    declarations = _declarations(payload.get("tools"), only)
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
    if web_search.wants_search(payload):  # Google runs the search itself
        body["tools"] = [*body.get("tools", []), search_tool()]
    if calling is not None and declarations:  # a toolConfig without functions has nothing to steer
        body["toolConfig"] = {"functionCallingConfig": calling}
    config = _generation_config(payload)
    if config:
        body["generationConfig"] = config
    return body


def _contents(messages: list[Any]) -> tuple[list[Json], list[Json]]:
    system: list[Json] = []
    contents: list[Json] = []
    call_names: dict[str, str] = {}  # tool_call_id -> function name; a later turn may reuse an id
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest(f"messages[{i}] must be an object.", param=f"messages[{i}]")
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend({"text": text} for text in _texts(message.get("content"), i) if text)
        elif role == "user":
            _append(contents, "user", _user_parts(message.get("content"), i))
        elif role == "assistant":
            _append(contents, "model", _assistant_parts(message, i, call_names))
        elif role in ("tool", "function"):
            _append_response(contents, _function_response(message, i, call_names))
        else:
            raise InvalidRequest(
                f"messages[{i}].role {role!r} is not supported.", param=f"messages[{i}].role"
            )
    return system, contents


def _append(contents: list[Json], role: str, parts: list[Json]) -> None:
    # Gemini refuses a content without parts, so an empty message is dropped rather than sent.
    if parts:
        contents.append({"role": role, "parts": parts})


def _append_response(contents: list[Json], part: Json) -> None:
    """Results of parallel calls go back in one user turn, as Gemini expects."""
    last = contents[-1] if contents else None
    if last is not None and last["role"] == "user" and all("functionResponse" in p for p in last["parts"]):
        last["parts"].append(part)
    else:
        contents.append({"role": "user", "parts": [part]})


def _texts(content: Any, i: int) -> list[str]:
    """The text of a string or text-parts content (refusals count as the assistant's text)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise InvalidRequest(f"messages[{i}].content must be a string or an array of parts.")
    texts = []
    for part in map(as_object, content):
        kind = part.get("type")
        if kind not in ("text", "refusal") or not isinstance(part.get(str(kind)), str):
            raise InvalidRequest(f"messages[{i}].content: only text parts are allowed here.")
        texts.append(part[str(kind)])
    return texts


def _user_parts(content: Any, i: int) -> list[Json]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, list):
        raise InvalidRequest(f"messages[{i}].content must be a string or an array of parts.")
    return [_user_part(as_object(part), i) for part in content if as_object(part).get("text") != ""]


def _user_part(part: Json, i: int) -> Json:
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return {"text": part["text"]}
    if kind == "image_url":
        url = as_object(part.get("image_url")).get("url")
        if isinstance(url, str):
            return _media_part(url, i)
    elif kind == "input_audio":
        audio = as_object(part.get("input_audio"))
        mime = AUDIO_MIME.get(str(audio.get("format")))
        if mime and isinstance(audio.get("data"), str):
            return {"inlineData": {"mimeType": mime, "data": audio["data"]}}
    elif kind == "file":
        data = as_object(part.get("file")).get("file_data")
        if isinstance(data, str) and data.startswith("data:"):
            return _media_part(data, i)
    raise InvalidRequest(f"messages[{i}].content: a {kind!r} part cannot be sent to Gemini.")


def _media_part(url: str, i: int) -> Json:
    if url.startswith("data:"):
        mime, data = _split_data_url(url, i)
        return {"inlineData": {"mimeType": mime, "data": data}}
    if urlsplit(url).scheme.lower() in ("http", "https", "gs"):
        return {"fileData": {"mimeType": guess_mime(url), "fileUri": url}}
    raise InvalidRequest(f"messages[{i}]: image URLs must be http(s), gs or data URLs.")


def _split_data_url(url: str, i: int) -> tuple[str, str]:
    """`data:image/png;base64,AAAA` -> ("image/png", "AAAA"); a percent-encoded payload is
    base64-encoded, since inlineData only takes base64."""
    header, comma, payload = url[5:].partition(",")
    if not comma:
        raise InvalidRequest(f"messages[{i}]: malformed data URL.")
    params = header.split(";")
    mime = params[0] or "text/plain"
    if "base64" in params[1:]:
        return mime, payload
    return mime, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")


def guess_mime(url: str) -> str:
    """Gemini needs a mimeType for fileData; the URL's extension is all there is to go on, and an
    `image_url` part with an unknown extension is most likely a JPEG."""
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return _MIME_BY_EXTENSION.get(extension, "image/jpeg")


def _assistant_parts(message: Json, i: int, call_names: dict[str, str]) -> list[Json]:
    parts: list[Json] = [{"text": text} for text in _texts(message.get("content"), i) if text]
    calls = as_list(message.get("tool_calls"))
    if isinstance(message.get("function_call"), dict):  # the legacy single-call form
        calls = [*calls, {"function": message["function_call"]}]
    for j, call in enumerate(map(as_object, calls)):
        fn = as_object(call.get("function"))
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"messages[{i}].tool_calls[{j}].function.name is required.")
        parts.append({"functionCall": {"name": name, "args": _arguments(fn.get("arguments"), i, j)}})
        if isinstance(call.get("id"), str):
            call_names[call["id"]] = name
    return parts


def _arguments(raw: Any, i: int, j: int) -> Json:
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        args = orjson.loads(raw) if isinstance(raw, str) else None
    except orjson.JSONDecodeError:
        args = None
    if not isinstance(args, dict):
        raise InvalidRequest(
            f"messages[{i}].tool_calls[{j}].function.arguments must be a JSON object.",
            param=f"messages[{i}].tool_calls[{j}].function.arguments",
        )
    return args


def _function_response(message: Json, i: int, call_names: dict[str, str]) -> Json:
    name = message.get("name") if message.get("role") == "function" else None
    if name is None:
        name = call_names.get(str(message.get("tool_call_id")))
    if not isinstance(name, str):
        raise InvalidRequest(
            f"messages[{i}].tool_call_id does not match a tool call of an earlier assistant message.",
            param=f"messages[{i}].tool_call_id",
        )
    text = "".join(_texts(message.get("content"), i))
    return {"functionResponse": {"name": name, "response": _response_object(text)}}


def _response_object(text: str) -> Json:
    """Gemini wants an object: a JSON-object result passes as it is, anything else goes under
    `output`, the key Google's docs name for a function's result."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"output": text}


def _calling_config(choice: Any) -> tuple[Json | None, set[str] | None]:
    """`functionCallingConfig` for `tool_choice`, and the tool names the declarations must be
    narrowed to: Gemini honours `allowedFunctionNames` only in ANY mode, so OpenAI's
    `allowed_tools` in auto mode is expressed by declaring only those tools."""
    if choice is None:
        return None, None
    if isinstance(choice, str) and choice in _MODE_FROM_CHOICE:
        return {"mode": _MODE_FROM_CHOICE[choice]}, None
    kind = as_object(choice).get("type")
    if kind == "function":
        return {"mode": "ANY", "allowedFunctionNames": [_tool_name(choice)]}, None
    if kind == "allowed_tools":
        allowed = as_object(choice.get("allowed_tools"))
        names = [_tool_name(tool) for tool in as_list(allowed.get("tools"))]
        if allowed.get("mode") == "required":
            return {"mode": "ANY", "allowedFunctionNames": names}, None
        return {"mode": "AUTO"}, set(names)
    raise InvalidRequest("`tool_choice` has an unsupported form.", param="tool_choice")


def _tool_name(tool: Any) -> str:
    name = as_object(as_object(tool).get("function")).get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest("`tool_choice` must name a function.", param="tool_choice")
    return name


def _declarations(tools: Any, only: set[str] | None) -> list[Json]:
    declarations = []
    for j, tool in enumerate(map(as_object, as_list(tools))):
        fn = tool.get("function")
        if tool.get("type", "function") != "function" or not isinstance(fn, dict):
            raise InvalidRequest(f"tools[{j}]: only function tools can be sent to Gemini.", param="tools")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"tools[{j}].function.name is required.", param="tools")
        if only is not None and name not in only:
            continue
        declaration: Json = {"name": name}
        if isinstance(fn.get("description"), str):
            declaration["description"] = fn["description"]
        parameters = gemini_schema(as_object(fn.get("parameters")))
        # Gemini rejects an OBJECT schema with no properties: a function without arguments
        # is declared without `parameters` instead (`strict` is dropped: Gemini has no such flag).
        if parameters.get("properties") or parameters.get("type", "object") != "object":
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return declarations


def gemini_schema(schema: Json) -> Json:
    """A JSON Schema narrowed to the OpenAPI subset Gemini's `Schema` accepts: local `$ref`s are
    inlined, `["x", "null"]` types become `nullable`, unknown keywords are dropped."""
    defs = {**as_object(schema.get("definitions")), **as_object(schema.get("$defs"))}
    return _clean_schema(schema, defs, ())


def _clean_schema(node: Json, defs: Json, seen: tuple[str, ...]) -> Json:
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or not isinstance(defs.get(name), dict):
            return {"type": "object"}  # Gemini has no references: a recursive one is cut here
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean_schema(merged, defs, (*seen, name))
    all_of = as_list(node.get("allOf"))
    if len(all_of) == 1 and isinstance(all_of[0], dict):  # pydantic wraps described refs this way
        return _clean_schema({**all_of[0], **{k: v for k, v in node.items() if k != "allOf"}}, defs, seen)
    out: Json = {}
    for key, value in node.items():
        key = "anyOf" if key == "oneOf" else key
        if key == "const":
            out.setdefault("enum", [value])
        elif key == "type":
            out.update(_schema_type(value))
        elif key == "properties":
            out[key] = {
                name: _clean_schema(as_object(sub), defs, seen) for name, sub in as_object(value).items()
            }
        elif key == "items":
            out[key] = _clean_schema(as_object(value), defs, seen)
        elif key == "anyOf":
            out[key] = [_clean_schema(as_object(sub), defs, seen) for sub in as_list(value)]
        elif key in _SCHEMA_KEYS and (key != "format" or value in _SCHEMA_FORMATS):
            out[key] = value
    if "enum" in out and not all(isinstance(v, str) for v in as_list(out["enum"])):
        del out["enum"]  # Gemini enums are string-only
    return _fold_null(out) if "anyOf" in out else out


def _fold_null(out: Json) -> Json:
    """`anyOf: [X, {type: null}]` (how pydantic spells Optional[X]) becomes X with `nullable`."""
    branches = [branch for branch in out["anyOf"] if branch.get("type") != "null"]
    if len(branches) == len(out["anyOf"]):
        return out
    rest = {key: value for key, value in out.items() if key != "anyOf"}
    if len(branches) == 1:
        return {**branches[0], **rest, "nullable": True}
    return {**rest, "anyOf": branches, "nullable": True}


def _schema_type(value: Any) -> Json:
    if not isinstance(value, list):
        return {"type": value}
    kinds = [kind for kind in value if kind != "null"]
    out: Json = {"type": kinds[0]} if kinds else {}
    if len(kinds) < len(value):
        out["nullable"] = True
    return out


def _generation_config(payload: Json) -> Json:
    config: Json = {
        gemini: payload[openai]
        for openai, gemini in _SAMPLING_TO_GEMINI.items()
        if payload.get(openai) is not None
    }
    limit = payload.get("max_completion_tokens")
    limit = payload.get("max_tokens") if limit is None else limit
    if limit is not None:
        config["maxOutputTokens"] = limit
    stop = payload.get("stop")
    if stop:
        config["stopSequences"] = [stop] if isinstance(stop, str) else stop
    if payload.get("logprobs"):
        config["responseLogprobs"] = True
    fmt = as_object(payload.get("response_format"))
    kind = fmt.get("type")
    if kind in ("json_object", "json_schema"):
        config["responseMimeType"] = "application/json"
        schema = as_object(fmt.get("json_schema")).get("schema")
        if kind == "json_schema" and isinstance(schema, dict):
            config["responseSchema"] = gemini_schema(schema)
    elif kind not in (None, "text"):
        raise InvalidRequest(f"response_format {kind!r} is not supported.", param="response_format")
    return config
