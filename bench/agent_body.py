"""The bodies a coding agent sends: an Anthropic Messages request with a system prompt, a tool
list and a conversation of tool calls and their results, sent again with two more messages at
each call (the agent's tool call and its result) until the session ends.

    bodies(calls, per_session=25)   # the calls of consecutive sessions, as JSON bytes
    responses_bodies(calls)         # the same conversations as Codex sends them (Responses API)
    gemini_bodies(calls)            # and as Gemini CLI sends them (generateContent)

Deterministic: the same session and message number give the same text, so a session's calls
resend equal messages, as an agent does. Sizes follow Claude Code's: a ~3 KB system prompt,
20 tools with JSON schemas, ~370 bytes a message; a session's first call has 41 messages
(27 KB), its 25th 89 (45 KB).
"""

from __future__ import annotations

import random
from typing import Any

import orjson

_WORDS = (
    "the", "function", "returns", "a", "value", "when", "its", "argument", "is", "missing", "so",
    "the", "caller", "checks", "it", "first", "def", "import", "class", "self", "path", "file", "line",
    "test", "error", "fix", "read", "write", "open", "close", "list", "dict",
)  # fmt: skip
FIRST = 40  # messages in a session's first call
STEP = 2  # messages each later call adds


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _message(session: int, number: int) -> dict[str, Any]:
    rng = random.Random(session * 100_003 + number)
    if number == 0:
        return {"role": "user", "content": f"Session {session}: " + _text(rng, 60)}
    if number % 2:
        return {
            "role": "assistant",
            "content": [
                {"type": "text", "text": _text(rng, 25)},
                {"type": "tool_use", "id": f"toolu_{session}_{number}", "name": "Read",
                 "input": {"file_path": f"/src/module_{number}.py", "limit": 200}},
            ],
        }  # fmt: skip
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{session}_{number - 1}",
             "content": [{"type": "text", "text": _text(rng, 60)}]},
        ],
    }  # fmt: skip


def _tools() -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [
        {
            "name": f"tool_{i}",
            "description": _text(rng, 50),
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": _text(rng, 8)},
                    "limit": {"type": "integer"},
                },
                "required": ["path"],
            },
        }
        for i in range(20)
    ]


def bodies(calls: int, per_session: int = 25, model: str = "bench-chat") -> list[bytes]:
    """`calls` consecutive calls of sessions of `per_session` calls each."""
    system = [{"type": "text", "text": _text(random.Random(3), 500)}]
    tools = _tools()
    out = []
    for call in range(calls):
        session, turn = divmod(call, per_session)
        messages = [_message(session, n) for n in range(FIRST + STEP * turn)]
        if messages[-1]["role"] == "assistant":
            messages.append(_message(session, len(messages)))  # a call ends on the user's turn
        body = {"model": model, "max_tokens": 8192, "system": system, "tools": tools, "messages": messages}
        out.append(orjson.dumps(body))
    return out


def responses_bodies(calls: int, per_session: int = 25, model: str = "bench-chat") -> list[bytes]:
    """The calls of `bodies` as a Responses API client (Codex) sends them, unstored: the
    instructions, function tools, and the conversation as input items (a message per text, a
    `function_call` per tool use, a `function_call_output` per result)."""
    out = []
    for raw in bodies(calls, per_session, model):
        call = orjson.loads(raw)
        items: list[dict[str, Any]] = []
        for message in call["messages"]:
            role, content = message["role"], message["content"]
            blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks:
                if block["type"] == "text":
                    part = "input_text" if role == "user" else "output_text"
                    items.append({"role": role, "content": [{"type": part, "text": block["text"]}]})
                elif block["type"] == "tool_use":
                    arguments = orjson.dumps(block["input"]).decode()
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": block["id"],
                            "name": block["name"],
                            "arguments": arguments,
                        }
                    )
                else:
                    output = block["content"][0]["text"]
                    items.append(
                        {"type": "function_call_output", "call_id": block["tool_use_id"], "output": output}
                    )
        tools = [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["input_schema"],
            }
            for t in call["tools"]
        ]
        body = {
            "model": model,
            "instructions": call["system"][0]["text"],
            "input": items,
            "tools": tools,
            "store": False,
            "max_output_tokens": 8192,
        }
        out.append(orjson.dumps(body))
    return out


def gemini_bodies(calls: int, per_session: int = 25) -> list[bytes]:
    """The calls of `bodies` as a generateContent client (Gemini CLI) sends them: the system
    instruction, function declarations, and the conversation as contents (a `functionCall`
    part per tool use, a `functionResponse` part per result; the model id is in the path)."""
    out = []
    for raw in bodies(calls, per_session):
        call = orjson.loads(raw)
        contents = []
        for message in call["messages"]:
            content = message["content"]
            blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content
            parts: list[dict[str, Any]] = []
            for block in blocks:
                if block["type"] == "text":
                    parts.append({"text": block["text"]})
                elif block["type"] == "tool_use":
                    parts.append(
                        {"functionCall": {"id": block["id"], "name": block["name"], "args": block["input"]}}
                    )
                else:
                    output = {"output": block["content"][0]["text"]}
                    parts.append(
                        {"functionResponse": {"id": block["tool_use_id"], "name": "Read", "response": output}}
                    )
            contents.append({"role": "model" if message["role"] == "assistant" else "user", "parts": parts})
        declarations = [
            {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
            for t in call["tools"]
        ]
        body = {
            "systemInstruction": {"parts": [{"text": call["system"][0]["text"]}]},
            "contents": contents,
            "tools": [{"functionDeclarations": declarations}],
            "generationConfig": {"maxOutputTokens": 8192},
        }
        out.append(orjson.dumps(body))
    return out
