"""Request bodies, Anthropic -> OpenAI: a Messages request (`POST /v1/messages`) as the
gateway's canonical chat completions request, for routes that are not Anthropic upstreams.

It takes what real clients send (the SDKs' stable and beta shapes, Claude Code): `system`-role
messages anywhere in `messages` stay system messages at their place; every content block with a
meaning elsewhere is mapped (text, images by URL or base64, documents as PDF, plain text or
content, search results, tool results with text and images); thinking blocks are left out (a
chat model cannot read another model's signed reasoning); `cache_control` and `citations` on
blocks are ignored, since they change nothing the model reads. A field or block the canonical
form has no place for is dropped and named (`Translation.dropped_for`), never refused; only a
malformed request (wrong types, an unknown role) is a 400. Fields honoured only by some
upstream protocols (sampling, `metadata.user_id`) are named per protocol. The web search server
tool becomes the canonical `web_search_options` (`anthropic_search`); other server tools are
hosted tools (`Translation.tool`: dropped and named, or refused with `hosted_tools: reject`).
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.recent_values import RecentValues
from unigate.translate import anthropic_search, web_search
from unigate.translate.checks import (
    base64_text,
    optional_array,
    optional_number,
    optional_object,
    optional_string,
    string_list,
    wrong_type,
)
from unigate.translate.known_turns import MIN_TURNS
from unigate.translate.translation import Translation

Json = dict[str, Any]
# Turns translated lately (known_turns.py), by the calling key and each turn's JSON: its chat
# messages and what it dropped.
Turns = RecentValues[tuple[str, bytes], tuple[list[Json], tuple[str, ...]]]

_TOOL_CHOICE = {"auto": "auto", "none": "none", "any": "required"}
# Read into the canonical request (or checked) below.
_READ = frozenset(
    {"model", "messages", "system", "max_tokens", "stream", "temperature", "top_p", "stop_sequences",
     "tools", "tool_choice", "metadata", "output_format", "output_config", "thinking", "service_tier",
     "speed"}
)  # fmt: skip
# Hints about cost, billing or diagnostics, not about the answer: ignored on translated routes
# without a word (`betas` is the SDK's header, should a client put it in the body).
_IGNORED = frozenset({"cache_control", "diagnostics", "fallback_credit_token", "betas"})
# Blocks that mark structure only (a fallback boundary): nothing to carry, nothing lost.
_STRUCTURAL = frozenset({"fallback"})
_THINKING = frozenset({"thinking", "redacted_thinking"})


def anthropic_to_openai_request(payload: Json) -> Json:
    """The canonical request alone (what was dropped is not reported)."""
    return translate_messages(payload).canonical


def translate_messages(payload: Json, turns: Turns | None = None, scope: str = "") -> Translation:
    """The canonical request and what it drops. With `turns`, the turns of a long conversation
    are looked up there by their JSON (under `scope`, the calling key's id: one key's
    translations are never another's) and only the turns not seen lately are translated."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("`messages` must be a non-empty array.", param="messages")
    chat: list[Json] = []
    out: Json = {"model": payload.get("model"), "messages": chat}
    result = Translation(out)
    reader = _Reader(result)
    system = reader.system_text(payload.get("system"), "system")
    if system:
        chat.append({"role": "system", "content": system})
    if turns is None or len(messages) < MIN_TURNS:
        for i, msg in enumerate(messages):
            chat.extend(reader.turn(msg, i))
    else:
        reader.known_turns(messages, turns, scope, chat)
    if not chat:
        raise InvalidRequest("The request has no content a chat model can read.", param="messages")
    _copy_settings(payload, result)
    _copy_tools(payload, result)
    for name, value in payload.items():
        if name not in _READ and name not in _IGNORED and value is not None:
            result.drop(name)  # container, context_management, mcp_servers, top_k, fallbacks, ...
    return result


def _copy_settings(payload: Json, result: Translation) -> None:
    out = result.canonical
    if isinstance(payload.get("max_tokens"), int):
        out["max_tokens"] = payload["max_tokens"]
    for key in ("temperature", "top_p"):
        if optional_number(payload.get(key), key) is not None:
            out[key] = payload[key]
            result.by_protocol[key] = key
    stop = string_list(payload.get("stop_sequences"), "stop_sequences")
    if stop:
        out["stop"] = stop
    if payload.get("stream"):
        # Anthropic streams always end with token counts, so the usage chunk is always needed.
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    metadata = optional_object(payload.get("metadata"), "metadata")
    user = optional_string(metadata.get("user_id"), "metadata.user_id")
    if user:
        out["user"] = user
        result.by_protocol["metadata.user_id"] = "user"
    config = optional_object(payload.get("output_config"), "output_config")
    fmt = config.get("format") or payload.get("output_format")
    if fmt is not None:
        out["response_format"] = _response_format(fmt)
    for name in ("effort", "task_budget"):
        if config.get(name) is not None:
            result.drop(f"output_config.{name}")
    thinking = optional_object(payload.get("thinking"), "thinking")
    if thinking.get("type") not in (None, "disabled"):
        result.drop("thinking")  # a chat model's reasoning is not the client's to configure here
    if payload.get("service_tier") not in (None, "auto"):
        result.drop("service_tier")
    if payload.get("speed") not in (None, "standard"):
        result.drop("speed")


def _response_format(fmt: Any) -> Json:
    """Structured outputs (`output_config.format`, the older `output_format`) as OpenAI's
    `json_schema` response format."""
    spec = optional_object(fmt, "output_config.format")
    schema = spec.get("schema")
    if spec.get("type") != "json_schema" or not isinstance(schema, dict):
        raise InvalidRequest(
            "`output_config.format` must be {type: json_schema, schema: {...}}.", param="output_config.format"
        )
    return {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}


class _Reader:
    """Turns messages and their content blocks into chat messages, noting what it drops."""

    def __init__(self, result: Translation) -> None:
        self.result = result
        self.dropped: list[str] = []  # every drop in turn, a turn's own kept with its translation

    def drop(self, name: str) -> None:
        self.result.drop(name)
        self.dropped.append(name)

    def known_turns(self, messages: list[Any], turns: Turns, scope: str, chat: list[Json]) -> None:
        """Every turn onto `chat` as `turn` translates it: from `turns` when it was translated
        lately (the same JSON: values equal in Python, `1`, `1.0` and `true`, translate apart),
        else translated and kept there."""
        get, dumps, result = turns.get, orjson.dumps, self.result
        for i, msg in enumerate(messages):
            try:
                key = (scope, dumps(msg))
            except orjson.JSONEncodeError:  # nested past orjson's depth: translated (and refused)
                chat.extend(self.turn(msg, i))
                continue
            known = get(key)
            if known is None:
                mark = len(self.dropped)
                known = (self.turn(msg, i), tuple(self.dropped[mark:]))
                turns.put(key, known, key[1])
            elif known[1]:
                for name in known[1]:
                    result.drop(name)
            chat.extend(known[0])

    # -- system text --

    def system_text(self, system: Any, where: str) -> str:
        if system is None or isinstance(system, str):
            return system or ""
        if not isinstance(system, list):
            raise InvalidRequest(f"`{where}` must be a string or an array of text blocks.", param=where)
        texts = []
        for j, block in enumerate(system):
            kind = _kind(block, f"{where}[{j}]")
            if kind == "text":
                texts.append(_text(block, f"{where}[{j}]"))
            elif kind not in _STRUCTURAL:
                self.drop(f"system.{kind}")
        return "\n\n".join(texts)

    # -- turns --

    def turn(self, msg: Any, i: int) -> list[Json]:
        """One Anthropic turn as chat messages: a user turn's `tool_result` blocks become `tool`
        messages (first, answering the previous assistant turn), the rest one user message;
        `mid_conv_system` blocks split the turn around a system message."""
        where = f"messages[{i}]"
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant", "system"):
            raise InvalidRequest("Each message needs role `user`, `assistant` or `system`.", param=where)
        role, content = msg["role"], msg.get("content")
        if role == "system":
            text = self.system_text(content, f"{where}.content")
            return [{"role": "system", "content": text}] if text else []
        if isinstance(content, str):
            return [{"role": role, "content": content}] if content or role == "user" else []
        if not isinstance(content, list):
            raise InvalidRequest("Message content must be a string or an array of blocks.", param=where)
        out: list[Json] = []
        run: list[tuple[int, Any]] = []
        for j, block in enumerate(content):
            if _kind(block, f"{where}.content[{j}]") == "mid_conv_system":
                out.extend(self._run(role, run, where))
                run = []
                text = self.system_text(block.get("content"), f"{where}.content[{j}].content")
                if text:
                    out.append({"role": "system", "content": text})
            else:
                run.append((j, block))
        return out + self._run(role, run, where)

    def _run(self, role: str, blocks: list[tuple[int, Any]], where: str) -> list[Json]:
        if not blocks:
            return []
        if role == "assistant":
            message = self._assistant(blocks, where)
            return [message] if message is not None else []
        tools = [
            self._tool_result(b, f"{where}.content[{j}]") for j, b in blocks if b["type"] == "tool_result"
        ]
        messages = [message for message, _ in tools]
        parts = [part for _, extra in tools for part in extra]  # images a tool message cannot hold
        for j, block in blocks:
            if block["type"] != "tool_result":
                parts.extend(self._user_parts(block, f"{where}.content[{j}]"))
        if parts:
            one_text = len(parts) == 1 and parts[0]["type"] == "text"
            messages.append({"role": "user", "content": parts[0]["text"] if one_text else parts})
        return messages

    # -- user content --

    def _user_parts(self, block: Json, where: str) -> list[Json]:
        kind = block["type"]
        if kind == "text":
            return [{"type": "text", "text": _text(block, where)}]
        if kind == "image":
            return self._image(block, where)
        if kind == "document":
            return self._document(block, where)
        if kind == "search_result":
            return [{"type": "text", "text": _search_result(block, where)}]
        if kind == "compaction":
            return self._compaction(block, where)
        if kind not in _THINKING and kind not in _STRUCTURAL:
            self.drop(f"messages.content.{kind}")
        return []

    def _image(self, block: Json, where: str) -> list[Json]:
        source = optional_object(block.get("source"), f"{where}.source")
        kind = source.get("type")
        if kind == "url":
            url = source.get("url")
            if not isinstance(url, str):
                raise wrong_type(f"{where}.source.url", "a string")
            return [{"type": "image_url", "image_url": {"url": url}}]
        if kind == "base64":
            data = base64_text(source.get("data"), f"{where}.source.data")
            media_type = optional_string(source.get("media_type"), f"{where}.source.media_type")
            return [
                {"type": "image_url", "image_url": {"url": f"data:{media_type or 'image/png'};base64,{data}"}}
            ]
        self.drop(f"messages.content.image.source.{kind}")  # a Files API id: held by Anthropic
        return []

    def _document(self, block: Json, where: str) -> list[Json]:
        source = optional_object(block.get("source"), f"{where}.source")
        kind = source.get("type")
        title = optional_string(block.get("title"), f"{where}.title")
        if as_enabled(block.get("citations")):
            self.drop("messages.content.document.citations")
        if kind == "base64":
            data = base64_text(source.get("data"), f"{where}.source.data")
            media_type = optional_string(source.get("media_type"), f"{where}.source.media_type")
            media_type = media_type or "application/pdf"
            file: Json = {
                "file_data": f"data:{media_type};base64,{data}",
                "filename": title or "document.pdf",
            }
            return [{"type": "file", "file": file}]
        if kind == "text":
            data = optional_string(source.get("data"), f"{where}.source.data") or ""
            return [{"type": "text", "text": f"{title}\n\n{data}" if title else data}]
        if kind == "content":
            inner = source.get("content")
            if isinstance(inner, str):
                return [{"type": "text", "text": inner}]
            parts: list[Json] = []
            for j, item in enumerate(optional_array(inner, f"{where}.source.content")):
                parts.extend(self._user_parts(_block(item, f"{where}.source.content[{j}]"), where))
            return parts
        # A PDF by URL or a Files API id: the chat form carries files only as data.
        self.drop(f"messages.content.document.source.{kind}")
        return []

    def _compaction(self, block: Json, where: str) -> list[Json]:
        """A summary of earlier context: its text is the context a chat model needs."""
        text = optional_string(block.get("content"), f"{where}.content")
        if text:
            return [{"type": "text", "text": text}]
        self.drop("messages.content.compaction")  # only the encrypted form: Anthropic's to read
        return []

    def _tool_result(self, block: Json, where: str) -> tuple[Json, list[Json]]:
        """The `tool` message, and the parts (images, PDFs) it cannot hold: they follow it in a
        user message."""
        tool_use_id = block.get("tool_use_id")
        if not isinstance(tool_use_id, str):
            raise InvalidRequest("`tool_result` needs a `tool_use_id`.", param=f"{where}.tool_use_id")
        content = block.get("content")
        texts: list[str] = []
        extra: list[Json] = []
        if isinstance(content, str):
            texts.append(content)
        else:
            for j, item in enumerate(optional_array(content, f"{where}.content")):
                for part in self._user_parts(_block(item, f"{where}.content[{j}]"), f"{where}.content[{j}]"):
                    if part["type"] == "text":
                        texts.append(part["text"])
                    else:
                        extra.append(part)
        text = "\n".join(texts)
        if block.get("is_error"):
            # Chat completions have no error flag on tool results; the text says it instead.
            text = f"Error: {text}"
        return {"role": "tool", "tool_call_id": tool_use_id, "content": text}, extra

    # -- assistant content --

    def _assistant(self, blocks: list[tuple[int, Any]], where: str) -> Json | None:
        texts: list[str] = []
        calls: list[Json] = []
        for j, block in blocks:
            kind = block["type"]
            if kind == "text":
                texts.append(_text(block, f"{where}.content[{j}]"))
            elif kind == "tool_use":
                calls.append(_tool_call(block, f"{where}.content[{j}]"))
            elif kind == "compaction":
                texts.extend(p["text"] for p in self._compaction(block, f"{where}.content[{j}]"))
            elif anthropic_search.is_search_block(block):
                continue  # a web search already run: the text after it carries what it found
            elif kind not in _THINKING and kind not in _STRUCTURAL:
                # Other server tool calls and their results (code execution, MCP) ran inside
                # Anthropic: no chat form.
                self.drop(f"messages.content.{kind}")
        if not texts and not calls:
            return None
        out: Json = {"role": "assistant", "content": "".join(texts) if texts else None}
        if calls:
            out["tool_calls"] = calls
        return out


def as_enabled(config: Any) -> bool:
    return isinstance(config, dict) and config.get("enabled") is True


def _block(block: Any, where: str) -> Json:
    _kind(block, where)
    result: Json = block
    return result


def _kind(block: Any, where: str) -> str:
    """A content block's `type`; a block that is not an object with a string type is refused."""
    if not isinstance(block, dict):
        raise wrong_type(where, "an object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise InvalidRequest("Each content block needs a `type`.", param=f"{where}.type")
    return kind


def _text(block: Json, where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise wrong_type(f"{where}.text", "a string")
    return text


def _search_result(block: Json, where: str) -> str:
    """A search result as the text a chat model reads: title, source, then its content."""
    title = optional_string(block.get("title"), f"{where}.title") or ""
    source = optional_string(block.get("source"), f"{where}.source") or ""
    texts = [
        _text(item, f"{where}.content[{j}]")
        for j, item in enumerate(optional_array(block.get("content"), f"{where}.content"))
        if _kind(item, f"{where}.content[{j}]") == "text"
    ]
    head = "\n".join(line for line in (title, source) if line)
    return "\n\n".join(part for part in (head, "\n".join(texts)) if part)


def _tool_call(block: Json, where: str) -> Json:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise InvalidRequest("`tool_use` needs an `id` and a `name`.", param=where)
    arguments = orjson.dumps(block.get("input") or {}).decode()
    return {
        "id": block["id"],
        "type": "function",
        "function": {"name": block["name"], "arguments": arguments},
    }


def _copy_tools(payload: Json, result: Translation) -> None:
    out = result.canonical
    tools: list[Json] = []
    names: set[str] = set()
    # An agent sends tens of tools with every call: the path is spelled out only when used.
    for j, tool in enumerate(optional_array(payload.get("tools"), "tools")):
        if not isinstance(tool, dict):
            raise wrong_type(f"tools[{j}]", "an object")
        kind = tool.get("type")
        if kind is not None and kind != "custom":
            where = f"tools[{j}]"
            if not isinstance(kind, str):
                raise wrong_type(f"{where}.type", "a string")
            if anthropic_search.is_search_tool(tool):  # the canonical form's hosted web search
                out[web_search.OPTIONS] = anthropic_search.options_of(tool, where, result)
            else:
                # Other server tools (code execution, MCP toolsets) run inside Anthropic, and
                # Anthropic-defined client tools (bash, text editor, computer) have no schema
                # here: dropped and named, or refused with `hosted_tools: reject`.
                result.tool(kind, where)
            continue
        name = tool.get("name")
        if not isinstance(name, str):
            raise InvalidRequest("Every tool needs a `name`.", param=f"tools[{j}].name")
        schema = tool.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            raise wrong_type(f"tools[{j}].input_schema", "an object")
        fn: Json = {"name": name, "parameters": schema or {"type": "object", "properties": {}}}
        description = tool.get("description")
        if isinstance(description, str):
            fn["description"] = description
        tools.append({"type": "function", "function": fn})
        names.add(name)
    if tools:
        out["tools"] = tools
    _copy_tool_choice(payload.get("tool_choice"), names, result)


def _copy_tool_choice(choice: Any, names: set[str], result: Translation) -> None:
    if choice is None:
        return
    kind = optional_object(choice, "tool_choice").get("type")
    if not isinstance(kind, str):
        raise wrong_type("tool_choice.type", "a string")
    out = result.canonical
    if kind == "tool" and choice.get("name") in names:
        out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif kind in _TOOL_CHOICE and (names or kind == "none"):
        if names:  # OpenAI refuses a `tool_choice` without tools
            out["tool_choice"] = _TOOL_CHOICE[kind]
    elif kind != "auto":
        result.drop("tool_choice")  # a tool that was dropped, or an unknown kind
        return
    if choice.get("disable_parallel_tool_use") and names:
        out["parallel_tool_calls"] = False
        result.by_protocol["tool_choice.disable_parallel_tool_use"] = "parallel_tool_calls"
